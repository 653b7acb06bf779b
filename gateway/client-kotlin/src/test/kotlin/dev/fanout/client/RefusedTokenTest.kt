package dev.fanout.client

import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * The gateway refuses an upgrade with an HTTP error and a JSON body (PROTOCOL.md "Error codes"): a refused
 * token must not be retried for ever. A local server answers with the gateway's exact bodies; the conformance
 * scenario `refused-token` plays the same against a real gateway with JWT auth.
 */
class RefusedTokenTest {
    private val expired = """{"error":"unauthorized","message":"token has expired","temporary":false}"""

    /** connect(), given up after 20 s: a client that retries for ever must fail the test, not hang it. */
    private fun connect(client: GatewayClient) = runBlocking { withTimeout(20_000) { client.connect() } }

    private fun client(server: RawWsServer, log: EventLog, configure: GatewayClientOptions.() -> Unit) =
        GatewayClient(server.url) {
            minDelayMs = 10
            maxDelayMs = 50
            pingIntervalMs = 0
            configure()
        }.also { it.addListener(log) }

    /** The events as short strings, to compare whole sequences. */
    private fun EventLog.lines() = all.map {
        when (it) {
            is GatewayEvent.Connecting -> "connecting ${it.attempt}"
            is GatewayEvent.Connected -> "connected"
            is GatewayEvent.Resubscribed -> "resubscribed"
            is GatewayEvent.Error -> "error ${it.error.code} temporary=${it.error.temporary}"
            is GatewayEvent.Disconnected -> "disconnected ${it.code} willReconnect=${it.willReconnect}"
            else -> it.toString()
        }
    }

    @Test
    fun `refused token — 401 with a fixed token gives an error with the code, no retry, and connect fails with unauthorized`() {
        RawWsServer { _, c -> c.refuse(401, "Unauthorized", expired) }.use { server ->
            val log = EventLog()
            val client = client(server, log) { token = "expired.jwt" }
            val e = assertThrows<GatewayException> { connect(client) }
            assertEquals("unauthorized", e.code)
            assertFalse(e.temporary)
            assertTrue(e.message!!.contains("token has expired"), e.message)
            assertEquals(listOf("connecting 0", "error unauthorized temporary=false", "disconnected 1006 willReconnect=false"), log.lines())
            assertEquals(1, server.accepted)
            assertEquals(ConnectionState.CLOSED, client.state)
            assertEquals("unauthorized", assertThrows<GatewayException> { runBlocking { client.subscribe("x") } }.code)
        }
    }

    @Test
    fun `refused token — 403 forbidden stops the client at once, getToken or not`() {
        val body = """{"error":"forbidden","message":"origin not allowed","temporary":false}"""
        RawWsServer { _, c -> c.refuse(403, "Forbidden", body) }.use { server ->
            val log = EventLog()
            val client = client(server, log) { getToken = { "t" } } // a new token does not change the origin
            assertEquals("forbidden", assertThrows<GatewayException> { connect(client) }.code)
            assertEquals(listOf("connecting 0", "error forbidden temporary=false", "disconnected 1006 willReconnect=false"), log.lines())
            assertEquals(1, server.accepted)
        }
    }

    @Test
    fun `refused token — with getToken the client asks once for a new token, and a good one connects`() {
        val calls = AtomicInteger()
        RawWsServer { _, c ->
            if (c.request["authorization"] != "Bearer fresh") return@RawWsServer c.refuse(401, "Unauthorized", expired)
            c.accept()
            c.hold()
        }.use { server ->
            val log = EventLog()
            val client = client(server, log) { getToken = { if (calls.getAndIncrement() == 0) "expired.jwt" else "fresh" } }
            connect(client)
            log.next<GatewayEvent.Resubscribed>() // connect() returns at the open, before it
            assertEquals(
                listOf("connecting 0", "error unauthorized temporary=false", "disconnected 1006 willReconnect=true", "connecting 1", "connected", "resubscribed"),
                log.lines(),
            )
            assertEquals(2, calls.get())
            runBlocking { client.close() }
        }
    }

    @Test
    fun `refused token — a getToken whose new token is refused too makes two attempts, then it stops`() {
        val calls = AtomicInteger()
        RawWsServer { _, c -> c.refuse(401, "Unauthorized", expired) }.use { server ->
            val log = EventLog()
            val client = client(server, log) { getToken = { "token-${calls.incrementAndGet()}" } }
            assertEquals("unauthorized", assertThrows<GatewayException> { connect(client) }.code)
            assertEquals(
                listOf(
                    "connecting 0", "error unauthorized temporary=false", "disconnected 1006 willReconnect=true",
                    "connecting 1", "error unauthorized temporary=false", "disconnected 1006 willReconnect=false",
                ),
                log.lines(),
            )
            assertEquals(2, calls.get())
            assertEquals(2, server.accepted)
        }
    }

    @Test
    fun `refused token — a reconnect refused after the client was connected stops it, and what waits fails`() {
        RawWsServer { n, c ->
            if (n > 0) return@RawWsServer c.refuse(401, "Unauthorized", expired)
            c.accept()
            c.send(0x8, byteArrayOf(0x03, 0xe9.toByte())) // close 1001: going away
            c.hold()
        }.use { server ->
            val log = EventLog()
            val client = client(server, log) { token = "revoked.jwt" }
            connect(client)
            log.next<GatewayEvent.Disconnected> { it.code == 1001 && it.willReconnect }
            log.next<GatewayEvent.Error> { it.error.code == "unauthorized" }
            log.next<GatewayEvent.Disconnected> { !it.willReconnect }
            assertEquals(ConnectionState.CLOSED, client.state)
            assertEquals("unauthorized", assertThrows<GatewayException> { runBlocking { client.publish("x", JsonPrimitive(1)) } }.code)
        }
    }

    @Test
    fun `refused upgrade — a temporary refusal (503 shutting_down, a 429 without a JSON body) keeps retrying`() {
        RawWsServer { n, c ->
            when (n) {
                0 -> c.refuse(503, "Service Unavailable", """{"error":"shutting_down","message":"server is shutting down","temporary":true}""")
                1 -> c.refuse(429, "Too Many Requests", "slow down")
                else -> {
                    c.accept()
                    c.hold()
                }
            }
        }.use { server ->
            val log = EventLog()
            val client = client(server, log) { token = "t" }
            connect(client)
            log.next<GatewayEvent.Resubscribed>()
            assertEquals(
                listOf(
                    "connecting 0", "error shutting_down temporary=true", "disconnected 1006 willReconnect=true",
                    "connecting 1", "error rate_limited temporary=true", "disconnected 1006 willReconnect=true",
                    "connecting 2", "connected", "resubscribed",
                ),
                log.lines(),
            )
            runBlocking { client.close() }
        }
    }

    @Test
    fun `upgrade refusal — the body decides, and without one 401 and 403 are not temporary and other statuses are`() {
        assertEquals("unauthorized" to false, upgradeRefusal(401, expired).let { it.code to it.temporary })
        assertEquals("unauthorized" to false, upgradeRefusal(401, "").let { it.code to it.temporary })
        assertEquals("forbidden" to false, upgradeRefusal(403, "<html>").let { it.code to it.temporary })
        assertEquals("bad_request" to false, upgradeRefusal(400, """{"error":"bad_request","message":"two tokens","temporary":false}""").let { it.code to it.temporary })
        assertEquals("hook_unavailable" to true, upgradeRefusal(503, """{"error":"hook_unavailable","temporary":true}""").let { it.code to it.temporary })
        assertEquals("http_error" to true, upgradeRefusal(502, "<html>Bad Gateway</html>").let { it.code to it.temporary })
        assertEquals("unauthorized" to false, upgradeRefusal(401, "[".repeat(100_000)).let { it.code to it.temporary })
    }
}
