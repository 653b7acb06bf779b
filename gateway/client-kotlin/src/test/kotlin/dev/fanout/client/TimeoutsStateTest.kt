package dev.fanout.client

import java.net.InetAddress
import java.net.ServerSocket
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.Executors
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.async
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.extension.ExtendWith
import org.junit.jupiter.api.parallel.ResourceAccessMode
import org.junit.jupiter.api.parallel.ResourceLock

/** Calls that never wait for ever, the observable state, and where callbacks run: against a real gateway and a closed port. */
@ExtendWith(SharedGateway::class)
@ResourceLock(SharedGateway.LOCK, mode = ResourceAccessMode.READ)
class TimeoutsStateTest(private val gateway: RealGateway) {
    /** A loopback port nothing listens on (bound, then closed): every connect is refused. */
    private fun closedPortUrl(): String {
        val port = ServerSocket(0, 1, InetAddress.getLoopbackAddress()).use { it.localPort }
        return "ws://127.0.0.1:$port/ws"
    }

    @Test
    fun `timeouts — connect() to a closed port fails with timeout within its bound, saying how the last attempt ended`() = runBlocking {
        val c = GatewayClient(closedPortUrl()) {
            minDelayMs = 10
            maxDelayMs = 100
            connectWaitMs = 1_500
        }
        val started = System.nanoTime()
        val e = withTimeout(10_000) { assertThrows<GatewayException> { runBlocking { c.connect() } } }
        val tookMs = (System.nanoTime() - started) / 1_000_000
        assertEquals("timeout", e.code)
        assertTrue(e.temporary)
        assertTrue(e.message!!.contains("1006"), e.message)
        assertTrue(tookMs in 1_400..6_000, "took $tookMs ms")
        // Still trying in the background; close() stops it.
        assertTrue(c.state == ConnectionState.WAITING || c.state == ConnectionState.CONNECTING, "${c.state}")
        c.closeAndJoin()
        assertEquals(ConnectionState.CLOSED, c.state)
    }

    @Test
    fun `timeouts — subscribe() while disconnected fails with timeout within subscribeTimeoutMs, and while paused at once`() = runBlocking {
        val down = GatewayClient(closedPortUrl()) {
            minDelayMs = 10
            maxDelayMs = 100
            subscribeTimeoutMs = 500
        }
        withTimeout(10_000) {
            assertEquals("timeout", assertThrows<GatewayException> { runBlocking { down.connect(300) } }.code)
            val e = assertThrows<GatewayException> { runBlocking { down.subscribe("kt.never") } }
            assertEquals("timeout", e.code)
            assertTrue(e.temporary)
        }
        down.closeAndJoin()

        val c = GatewayClient(gateway.url) { minDelayMs = 10; maxDelayMs = 100 }
        withTimeout(20_000) {
            c.connect()
            c.pause()
            c.connectionState.first { it == ConnectionState.PAUSED }
            val e = assertThrows<GatewayException> { runBlocking { c.subscribe(gateway.channel("kt.paused")) } }
            assertEquals("not_connected", e.code)
            assertTrue(e.message!!.contains("paused"), e.message)
            c.resume()
            c.connectionState.first { it == ConnectionState.OPEN }
            c.subscribe(gateway.channel("kt.resumed")) // works again
        }
        c.closeAndJoin()
    }

    @Test
    fun `state — connectionState goes CONNECTING, OPEN, and CLOSED after a close() from a plain thread`() = runBlocking {
        val c = GatewayClient(gateway.url)
        val seen = CopyOnWriteArrayList<ConnectionState>()
        val watching = CompletableDeferred<Unit>()
        val watcher = launch {
            c.connectionState.takeWhile { it != ConnectionState.CLOSED }.collect { s ->
                seen.add(s)
                watching.complete(Unit)
            }
        }
        withTimeout(20_000) {
            watching.await()
            c.connect()
            c.connectionState.first { it == ConnectionState.OPEN }
            Thread { c.close() }.apply { start() }.join() // close() is not suspend: callable from onDestroy
            watcher.join()
        }
        assertEquals(listOf(ConnectionState.IDLE, ConnectionState.CONNECTING, ConnectionState.OPEN), seen.distinct())
        assertEquals(ConnectionState.CLOSED, c.state)
    }

    @Test
    fun `threads — listeners and onPresence run on the app's dispatcher in order, and a listener that throws reaches the log handler`() = runBlocking {
        val executor = Executors.newSingleThreadExecutor { r -> Thread(r, "app-main").apply { isDaemon = true } }
        val logged = CopyOnWriteArrayList<String>()
        val threads = CopyOnWriteArrayList<String>()
        val events = CopyOnWriteArrayList<GatewayEvent>()
        val channel = gateway.channel("kt.threads")
        val joined = CompletableDeferred<String>()
        val c = GatewayClient(gateway.url) {
            callbackDispatcher = executor.asCoroutineDispatcher()
            logHandler = GatewayLogHandler { level, message, error -> logged.add("$level $message ${error?.message}") }
        }
        val disconnected = CompletableDeferred<Unit>()
        c.addListener { e ->
            threads.add(Thread.currentThread().name)
            events.add(e)
            if (e is GatewayEvent.Disconnected) disconnected.complete(Unit)
        }
        c.addListener { e -> if (e is GatewayEvent.Connected) throw IllegalStateException("listener bug") }
        val fromFlow = async { c.events.first { it is GatewayEvent.Resubscribed } }
        withTimeout(20_000) {
            c.connect()
            c.subscribe(
                channel,
                SubscribeOptions(presence = Presence.MEMBER_AND_WATCH, onPresence = { e ->
                    threads.add(Thread.currentThread().name)
                    joined.complete(e.client)
                }),
            )
            joined.await()
            fromFlow.await()
            c.publish(channel, JsonPrimitive(1))
            c.closeAndJoin()
        }
        withTimeout(10_000) { disconnected.await() } // the last event, after close
        assertTrue(threads.isNotEmpty() && threads.all { it.startsWith("app-main") }, "$threads") // "app-main @coroutine#n" in debug mode
        assertEquals(GatewayEvent.Connecting(0), events.first())
        assertTrue(events.indexOf(GatewayEvent.Connected) < events.indexOfFirst { it is GatewayEvent.Resubscribed })
        assertTrue(logged.any { it.startsWith("WARN") && it.contains("listener bug") }, "$logged")
        assertFalse(events.any { it is GatewayEvent.Error }, "$events")
        executor.shutdown()
    }
}
