package dev.fanout.client

import java.util.concurrent.CopyOnWriteArrayList
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineExceptionHandler
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.takeWhile
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.extension.ExtendWith
import org.junit.jupiter.api.parallel.ResourceAccessMode
import org.junit.jupiter.api.parallel.ResourceLock

/** Positions that survive a crash, and the subscription's Flow (one collector, bounded buffer, close), against a real gateway. */
@ExtendWith(SharedGateway::class)
@ResourceLock(SharedGateway.LOCK, mode = ResourceAccessMode.READ)
class PositionsFlowsTest(private val gateway: RealGateway) {
    private fun client(configure: GatewayClientOptions.() -> Unit = {}) = GatewayClient(gateway.url) {
        minDelayMs = 10
        maxDelayMs = 200
        configure()
    }

    /** [n] messages `{i}` (1..n) stored on [channel] before anyone subscribes. */
    private suspend fun fill(c: GatewayClient, channel: String, n: Int) {
        for (chunk in (1..n).chunked(100)) {
            val results = c.publishBatch(chunk.map { BatchItem(channel, JsonPrimitive(it)) })
            assertTrue(results.all { it is BatchItemResult.Stored }, "$results")
        }
    }

    private fun GatewayMessage.i(): Int = (data as JsonPrimitive).content.toInt()

    @Test
    fun `positions — a slow collector saves the handed message's position, and a new process resumes from it without gap or duplicate`() = runBlocking {
        val channel = gateway.channel("kt.pos")
        val n = 300
        val first = client()
        withTimeout(60_000) {
            first.connect()
            fill(first, channel, n)
            val sub = first.subscribe(channel, SubscribeOptions(from = StartPosition.All))
            var saved: StreamPosition? = null
            var bufferedAhead = 0L
            val handled = mutableListOf<Int>()
            sub.messages.take(120).collect { m ->
                assertEquals(m.position, sub.position, "the position is the message being handled")
                assertNotNull(m.epoch)
                bufferedAhead = maxOf(bufferedAhead, sub.lastSeq - m.seq)
                delay(2) // a slow handler
                handled.add(m.i())
                saved = m.position // saved once handled, as the README says
            }
            // The old advice, saving lastSeq, would have skipped what was buffered but never handled.
            assertTrue(bufferedAhead > 0, "lastSeq never ran ahead of the handled message")
            first.closeAndJoin() // the crash: nothing after the saved position was handled

            val second = client()
            second.connect()
            val resumed = second.subscribe(channel, SubscribeOptions(from = saved!!.next()))
            resumed.messages.take(n - handled.size).collect { m -> handled.add(m.i()) }
            assertEquals((1..n).toList(), handled)
            second.closeAndJoin()
        }
    }

    @Test
    fun `flows — a collector a whole buffer behind gets every message once and in order (the subscription pauses, then resumes from its position)`() = runBlocking {
        val channel = gateway.channel("kt.buf")
        val n = 400
        val c = client { subscriptionBuffer = 16 }
        withTimeout(90_000) {
            c.connect()
            fill(c, channel, n)
            val sub = c.subscribe(channel, SubscribeOptions(from = StartPosition.All))
            val got = sub.messages.take(n).toList().map { it.i() }
            assertEquals((1..n).toList(), got)
            assertTrue(c.stats.bufferOverflows > 0, "the buffer of 16 never filled")
            // Live messages after the pauses still come.
            c.publish(channel, JsonPrimitive(n + 1))
            assertEquals(n + 1, sub.messages.first().i())
            c.closeAndJoin()
        }
    }

    @Test
    fun `flows — close() completes every collector normally, no GatewayException(closed)`() = runBlocking {
        val channel = gateway.channel("kt.close")
        val c = client()
        val crashes = CopyOnWriteArrayList<Throwable>()
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default + CoroutineExceptionHandler { _, e -> crashes.add(e) })
        withTimeout(30_000) {
            c.connect()
            val sub = c.subscribe(channel)
            val started = CompletableDeferred<Unit>()
            val got = mutableListOf<Int>()
            val collector = scope.launch { sub.messages.collect { m -> got.add(m.i()); started.complete(Unit) } }
            c.publish(channel, JsonPrimitive(1))
            started.await()
            c.close() // not suspend: as from onCleared()
            collector.join()
            assertEquals(listOf(1), got)
            assertTrue(crashes.isEmpty(), "$crashes")
            assertTrue(!collector.isCancelled, "the collector was cancelled instead of completing")
        }
    }

    @Test
    fun `flows — a second collector at the same time is refused with a clear error, and after the first is cancelled the next one gets the message it held`() = runBlocking {
        val channel = gateway.channel("kt.two")
        val c = client()
        withTimeout(30_000) {
            c.connect()
            val sub = c.subscribe(channel)
            val holding = CompletableDeferred<StreamPosition>()
            var firstPosition: StreamPosition? = null
            val firstCollector = launch(Dispatchers.Default) {
                sub.messages.collect { m ->
                    if (m.i() == 1) firstPosition = m.position
                    if (m.i() == 2) {
                        holding.complete(m.position)
                        awaitCancellation() // a lifecycle that stops while the message is being handled
                    }
                }
            }
            for (i in 1..3) c.publish(channel, JsonPrimitive(i))
            assertEquals(holding.await(), sub.position)
            val e = assertThrows<IllegalStateException> { runBlocking { sub.messages.first() } }
            assertTrue(e.message!!.contains("already have a collector"), e.message)
            firstCollector.cancelAndJoin()
            assertEquals(firstPosition, sub.position, "the cancelled message is not counted as handed")
            // Message 2 was never handled to its end: the next collector (repeatOnLifecycle's next start) gets it first.
            assertEquals(listOf(2, 3), sub.messages.take(2).toList().map { it.i() })
            c.closeAndJoin()
        }
    }

    @Test
    fun `flows — unsubscribe ends the Flow normally and position stays the last handed message`() = runBlocking {
        val channel = gateway.channel("kt.unsub")
        val c = client()
        withTimeout(30_000) {
            c.connect()
            val sub = c.subscribe(channel)
            assertNull(sub.position)
            c.publish(channel, JsonPrimitive(1))
            val m = sub.messages.first()
            sub.unsubscribe()
            assertEquals(emptyList<Int>(), sub.messages.takeWhile { true }.toList().map { it.i() })
            assertEquals(m.position, sub.position)
            c.closeAndJoin()
        }
    }
}
