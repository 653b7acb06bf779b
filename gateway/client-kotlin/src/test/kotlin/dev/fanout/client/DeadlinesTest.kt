package dev.fanout.client

import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.extension.ExtendWith
import org.junit.jupiter.api.parallel.ResourceAccessMode
import org.junit.jupiter.api.parallel.ResourceLock

/**
 * publish, rpc and history against a gateway that stops answering (its processes stopped): each ends at its deadline.
 * It freezes the run's shared gateway, so it holds that gateway's lock alone: no other test uses it meanwhile.
 */
@ExtendWith(SharedGateway::class)
@ResourceLock(SharedGateway.LOCK, mode = ResourceAccessMode.READ_WRITE)
class DeadlinesTest(private val gateway: RealGateway) {
    private suspend fun timesOut(bound: Long, call: suspend () -> Unit): GatewayException {
        val started = System.nanoTime()
        val e = assertThrows<GatewayException> { runBlocking { withTimeout(10_000) { call() } } }
        val tookMs = (System.nanoTime() - started) / 1_000_000
        assertEquals("timeout", e.code, e.message)
        assertTrue(e.temporary)
        assertTrue(tookMs in bound - 50..bound + 5_000, "took $tookMs ms for a bound of $bound")
        return e
    }

    @Test
    fun `deadlines — publish, rpc and history fail with timeout while the gateway is stalled, and a publish retried with its msgId is stored once`() = runBlocking {
        val c = GatewayClient(gateway.url) {
            publishTimeoutMs = 400
            rpcTimeoutMs = 500
            historyTimeoutMs = 600
            pingIntervalMs = 0 // the stalled link is not to be noticed by pings here
        }
        c.connect()
        val ch = gateway.channel("kt.stall")
        c.publish(ch, JsonPrimitive(1))
        gateway.freeze()
        try {
            val pub = timesOut(400) { c.publish(ch, JsonPrimitive(2), msgId = "stalled-2") }
            assertTrue(pub.message!!.contains("stalled-2"), pub.message)
            timesOut(500) { c.rpc("echo") }
            timesOut(600) { c.history(ch) }
        } finally {
            gateway.thaw()
        }
        // The stalled publish reached the gateway, which stored it once it went on: the retry is a duplicate of it.
        val again = c.publish(ch, JsonPrimitive(2), msgId = "stalled-2")
        val stored = c.history(ch).messages
        assertEquals(listOf(1, 2), stored.map { it.data.jsonPrimitive.int })
        assertEquals(PublishResult(stored[1].seq, duplicate = true), again)
        c.closeAndJoin()
    }
}
