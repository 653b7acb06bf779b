package dev.fanout.client

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/**
 * Whoever hears the final `Disconnected(willReconnect = false)` reads `CLOSED`: every path that ends the client for
 * good sets the state before it emits. A collector on `Dispatchers.Unconfined` runs inside the emit, so it reads the
 * state at the very moment the event is sent (the state of the failed attempt, before the fix).
 */
class FinalStateTest {
    private val expired = """{"error":"unauthorized","message":"token has expired","temporary":false}"""

    /** A close frame with [code] and no reason. */
    private fun closeFrame(code: Int) = byteArrayOf((code shr 8).toByte(), (code and 0xff).toByte())

    /**
     * Connects, then returns the state an unconfined collector read when the final Disconnected was emitted, and the
     * code a call made after it fails with.
     */
    private fun atFinalEvent(server: RawWsServer): Pair<ConnectionState, String?> = runBlocking {
        val client = GatewayClient(server.url) {
            token = "t.jwt"
            minDelayMs = 10
            maxDelayMs = 50
            pingIntervalMs = 0
        }
        val seen = CompletableDeferred<ConnectionState>()
        val watcher = launch(Dispatchers.Unconfined) {
            client.events.collect {
                if (it is GatewayEvent.Disconnected && !it.willReconnect) seen.complete(client.state)
            }
        }
        try {
            withTimeout(20_000) { client.connect() }
            val state = withTimeout(20_000) { seen.await() }
            state to runCatching { client.publish("x", JsonPrimitive(1)) }.exceptionOrNull()?.let { (it as? GatewayException)?.code }
        } finally {
            watcher.cancel()
            client.close()
        }
    }

    @Test
    fun `final state — a reconnect refused with 401 is heard with the state CLOSED`() {
        RawWsServer { n, c ->
            if (n > 0) return@RawWsServer c.refuse(401, "Unauthorized", expired)
            c.accept()
            c.send(0x8, closeFrame(1001))
            c.hold()
        }.use { server -> assertEquals(ConnectionState.CLOSED to "unauthorized", atFinalEvent(server)) }
    }

    @Test
    fun `final state — a 4403 close from the server is heard with the state CLOSED`() {
        RawWsServer { _, c ->
            c.accept()
            c.send(0x8, closeFrame(4403))
            c.hold()
        }.use { server -> assertEquals(ConnectionState.CLOSED to "disconnected", atFinalEvent(server)) }
    }

    @Test
    fun `final state — a 4001 close without getToken is heard with the state CLOSED`() {
        RawWsServer { _, c ->
            c.accept()
            c.send(0x8, closeFrame(4001))
            c.hold()
        }.use { server -> assertEquals(ConnectionState.CLOSED to "token_expired", atFinalEvent(server)) }
    }
}
