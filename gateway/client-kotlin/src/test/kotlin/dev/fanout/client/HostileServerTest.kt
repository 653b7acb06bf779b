package dev.fanout.client

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * A server (or a man in the middle on `ws://`) that sends frames built to exhaust the client: lengths declared
 * far past the frame's end (an OutOfMemoryError while decoding, before), or nesting tens of thousands deep (a
 * StackOverflowError). Neither may escape as an Error: each is a protocol error — an `error` event, the socket
 * closed with 1002 — and the client reconnects as after any other loss.
 */
class HostileServerTest {
    private fun hex(s: String) = s.chunked(2).map { it.toInt(16).toByte() }.toByteArray()

    /** `{"op": <value>}` with [value] as raw MessagePack bytes. */
    private fun opIs(value: ByteArray) = hex("81a26f70") + value

    /**
     * Plays [frames] against a client on [wire], one per connection (the last connection stays quiet), and checks
     * each is refused as a protocol error and the client reconnects.
     */
    private fun play(wire: Wire, frames: List<(RawWsServer.Conn) -> Unit>) {
        val closeCodes = ConcurrentHashMap<Int, Int>()
        val closed = CountDownLatch(frames.size)
        RawWsServer { n, c ->
            c.accept()
            if (n >= frames.size) return@RawWsServer c.hold()
            frames[n](c)
            c.readCloseCode()?.let { closeCodes[n] = it }
            closed.countDown()
        }.use { server ->
            val log = EventLog()
            val client = GatewayClient(server.url) {
                this.wire = wire
                minDelayMs = 10
                maxDelayMs = 50
                pingIntervalMs = 0
            }
            client.addListener(log)
            runBlocking { client.connect() }
            for (i in frames.indices) {
                log.next<GatewayEvent.Connected>()
                val error = log.next<GatewayEvent.Error>().error
                assertEquals("bad_json", error.code, "frame $i: $error")
                log.next<GatewayEvent.Disconnected> { it.code == CLOSE_PROTOCOL_ERROR && it.willReconnect }
            }
            log.next<GatewayEvent.Connected>()
            assertTrue(closed.await(20, TimeUnit.SECONDS), "the client did not close every hostile connection")
            assertEquals(frames.indices.associateWith { CLOSE_PROTOCOL_ERROR }, closeCodes.toMap())
            val bugs = log.all.filterIsInstance<GatewayEvent.Error>().filter { it.error.code == "internal" }
            assertEquals(emptyList<GatewayEvent>(), bugs, "an Error escaped the decoder")
            assertEquals(ConnectionState.OPEN, client.state)
            runBlocking { client.close() }
        }
    }

    @Test
    fun `hostile server — 5-byte MessagePack frames declaring 2^31 elements are protocol errors, not OutOfMemoryError`() {
        play(
            Wire.MSGPACK,
            listOf(
                { c -> c.sendBinary(hex("dd7fffffff")) }, // array 32: 2^31-1 elements
                { c -> c.sendBinary(hex("df3fffffff")) }, // map 32: 2^30-1 entries
                { c -> c.sendBinary(opIs(hex("dd7fffffff"))) }, // the same one level in
                { c -> c.sendBinary(hex("82a26f70a36d7367a464617461c67fffffff")) }, // a msg whose data is bin 32 of 2^31-1 bytes
                { c -> c.sendBinary(opIs(hex("db7fffff00"))) }, // str 32 past the end
            ),
        )
    }

    @Test
    fun `hostile server — MessagePack nested 100,000 deep is a protocol error, not StackOverflowError`() {
        val deep = opIs(ByteArray(100_000) { 0x91.toByte() } + hex("c0")) // fixarray of one, 100,000 times
        val level = hex("81a178") // a map of one, key "x"
        val deepMaps = opIs(ByteArray(50_000 * level.size) { k -> level[k % level.size] } + hex("c0"))
        play(Wire.MSGPACK, listOf({ c -> c.sendBinary(deep) }, { c -> c.sendBinary(deepMaps) }))
    }

    @Test
    fun `hostile server — JSON nested 100,000 deep is a protocol error, not StackOverflowError`() {
        val deep = """{"op":"pong","x":""" + "[".repeat(100_000) + "]".repeat(100_000) + "}"
        val deepObjects = """{"op":"pong","x":""" + """{"a":""".repeat(100_000) + "1" + "}".repeat(100_000) + "}"
        play(Wire.JSON, listOf({ c -> c.sendText(deep) }, { c -> c.sendText(deepObjects) }))
    }

    @Test
    fun `hostile server — a msg whose MessagePack payload is JSON nested too deep is a protocol error`() {
        val json = "[".repeat(MAX_FRAME_DEPTH) + "]".repeat(MAX_FRAME_DEPTH)
        val msg = hex("82a26f70a36d7367a464617461c5") + byteArrayOf((json.length shr 8).toByte(), json.length.toByte()) + json.toByteArray()
        play(Wire.MSGPACK, listOf({ c -> c.sendBinary(msg) }))
    }
}
