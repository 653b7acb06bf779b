package dev.fanout.client

import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.ReentrantLock
import kotlin.concurrent.withLock

/** A client's events as they come, for tests that wait for one after another (a latch per wait, no sleeps). */
class EventLog : GatewayListener {
    val all = CopyOnWriteArrayList<GatewayEvent>()
    private val lock = ReentrantLock()
    private val arrived = lock.newCondition()
    private var cursor = 0

    override fun onEvent(event: GatewayEvent) {
        lock.withLock {
            all.add(event)
            arrived.signalAll()
        }
    }

    /** The next event after the last one [next] returned that is a [T] matching [ok]; fails after [timeoutMs]. */
    inline fun <reified T : GatewayEvent> next(timeoutMs: Long = 20_000, noinline ok: (T) -> Boolean = { true }): T =
        nextOf(timeoutMs) { it is T && ok(it) } as T

    fun nextOf(timeoutMs: Long, ok: (GatewayEvent) -> Boolean): GatewayEvent {
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
        lock.withLock {
            while (true) {
                while (cursor < all.size) {
                    val e = all[cursor++]
                    if (ok(e)) return e
                }
                val left = deadline - System.nanoTime()
                if (left <= 0) throw AssertionError("no matching event within $timeoutMs ms; ${all.size} events, the last: ${all.takeLast(20)}")
                arrived.awaitNanos(left)
            }
        }
    }
}
