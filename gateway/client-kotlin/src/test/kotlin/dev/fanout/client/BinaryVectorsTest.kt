package dev.fanout.client

import java.io.File
import java.util.Base64
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.contentOrNull
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.put
import okio.ByteString.Companion.decodeHex
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.msgpack.core.MessagePack

/**
 * fanout.v1.msgpack against the shared binary vectors (gateway/conformance/vectors/binary-frames.json, which the
 * gateway's codec and the TypeScript SDK read too): the SDK reads the server's bytes as the frames the JSON wire
 * gives, and writes exactly the bytes of the client frames. Beside them, the shared coalesced frames
 * (gateway/conformance/vectors/coalesced-frames.json, written by the gateway's coalescer and codecs): each codec
 * reads a window's frame, coalesced or plain, as the frames it holds, in order.
 */
class BinaryVectorsTest {
    private val vectors = Json.parseToJsonElement(File("../conformance/vectors/binary-frames.json").readText()).jsonObject

    private fun cases(kind: String, check: (JsonObject, ByteArray, String) -> Unit): List<DynamicTest> =
        vectors.getValue(kind).jsonArray.map { it.jsonObject }.map { v ->
            val hex = v.s("hex")!!
            DynamicTest.dynamicTest("binary vectors — $kind: ${v.s("name")}") { check(v.getValue("frame").jsonObject, hex.decodeHex().toByteArray(), hex) }
        }

    /** A `{"$bytes": hex}` value's bytes. */
    private fun bytesOf(e: JsonElement?): ByteArray? = ((e as? JsonObject)?.get("\$bytes") as? JsonPrimitive)?.content?.decodeHex()?.toByteArray()

    private fun decode(bytes: ByteArray): ReceivedFrame = MsgpackCodec.decodeBinary(bytes) ?: throw AssertionError("the bytes do not decode")

    private fun encodeHex(frame: JsonObject): String = MsgpackCodec.encode(frame).hex()

    @TestFactory
    fun server() = cases("server") { frame, bytes, hex ->
        val got = decode(bytes)
        val raw = bytesOf(frame["data"])
        if (raw == null) {
            assertNull(got.payload)
            assertEquals(normal(frame), normal(got.fields))
            // Numbers, key order, nesting: the SDK's encoder writes what the gateway writes.
            assertEquals(hex, encodeHex(frame))
            return@cases
        }
        assertArrayEquals(raw, got.payload)
        // A JSON payload is parsed into data, as the JSON wire has it; other bytes stay out of the fields.
        val want = if (frame.s("enc") == "binary") JsonObject(frame - "data") else JsonObject(frame + ("data" to Json.parseToJsonElement(raw.decodeToString())))
        assertEquals(normal(want), normal(got.fields))
    }

    private val coalesced = Json.parseToJsonElement(File("../conformance/vectors/coalesced-frames.json").readText()).jsonObject

    private fun coalescedCases(kind: String, check: (JsonObject, List<JsonObject>) -> Unit): List<DynamicTest> =
        coalesced.getValue(kind).jsonArray.map { it.jsonObject }.map { v ->
            DynamicTest.dynamicTest("coalesced vectors — $kind: ${v.s("name")}") { check(v, v.getValue("frames").jsonArray.map { it.jsonObject }) }
        }

    @TestFactory
    fun coalescedJson() = coalescedCases("json") { v, frames ->
        val got = JsonCodec.framesOfText(v.s("text")!!) ?: throw AssertionError("the text does not split into frames")
        assertEquals(frames.map(::normal), got.map { normal(it.fields) })
        // Each part is kept as its own text (a delta base), which reads as its frame alone.
        assertEquals(frames.map(::normal), got.map { normal(Json.parseToJsonElement(it.text!!)) })
    }

    @TestFactory
    fun coalescedMsgpack() = coalescedCases("msgpack") { v, frames ->
        val got = MsgpackCodec.framesOfBinary(v.s("hex")!!.decodeHex().toByteArray()) ?: throw AssertionError("the bytes do not decode")
        assertEquals(frames.size, got.size)
        for ((frame, f) in frames.zip(got)) {
            val raw = bytesOf(frame["data"])!!
            assertArrayEquals(raw, f.payload)
            val want = if (frame.s("enc") == "binary") JsonObject(frame - "data") else JsonObject(frame + ("data" to Json.parseToJsonElement(raw.decodeToString())))
            assertEquals(normal(want), normal(f.fields))
        }
    }

    @TestFactory
    fun client() = cases("client") { frame, bytes, hex ->
        val raw = bytesOf(frame["data"])
        if (raw != null) {
            // A pub of bytes: the SDK builds it as the JSON wire carries it (base64, "enc"); the binary wire writes a bin.
            val json = JsonObject(frame + ("data" to JsonPrimitive(Base64.getEncoder().encodeToString(raw))) + ("enc" to JsonPrimitive("base64")))
            assertEquals(hex, encodeHex(json))
            return@cases
        }
        assertEquals(hex, encodeHex(frame))
        val got = decode(bytes)
        assertEquals(normal(frame), normal(got.fields))
    }

    @TestFactory
    fun messages() = vectors.getValue("server").jsonArray.map { it.jsonObject }.filter { it.getValue("frame").jsonObject.s("op") == "msg" }.map { v ->
        DynamicTest.dynamicTest("binary vectors — message: ${v.s("name")}") {
            val frame = v.getValue("frame").jsonObject
            val got = decode(v.s("hex")!!.decodeHex().toByteArray())
            val m = toMessage(got.fields, "unused", explicitAck = false, got.payload) {}
            assertEquals(frame.s("channel"), m.channel)
            assertEquals(frame.s("enc"), m.enc)
            val raw = bytesOf(frame["data"])
            when (frame.s("enc")) {
                "binary" -> {
                    assertEquals(JsonNull, m.data)
                    assertArrayEquals(raw, m.bytes)
                }
                "text" -> {
                    assertEquals(frame["data"], m.data)
                    assertNull(m.bytes)
                }
                else -> {
                    assertEquals(Json.parseToJsonElement(raw!!.decodeToString()), m.data)
                    assertNull(m.bytes)
                }
            }
        }
    }

    @Test
    fun `binary vectors — a publish of bytes is base64 with enc and type in JSON, a bin in MessagePack, batch items likewise`() {
        val png = byteArrayOf(0x89.toByte(), 0x50, 0x4e, 0x47, 0x00, 0xff.toByte())
        val f = pubFrame("files.x", BatchItem("files.x", png, "image/png").data, "m", type = "image/png")
        assertEquals("""{"op":"pub","channel":"files.x","enc":"base64","data":"iVBORwD/","type":"image/png","msgId":"m"}""", JsonCodec.encode(f))
        val got = MessagePack.newDefaultUnpacker(MsgpackCodec.encode(f).toByteArray())
        assertEquals(5, got.unpackMapHeader())
        assertEquals(listOf("op", "pub", "channel", "files.x"), List(4) { got.unpackString() })
        assertEquals("data", got.unpackString())
        assertArrayEquals(png, got.readPayload(got.unpackBinaryHeader()))
        assertEquals(listOf("type", "image/png", "msgId", "m"), List(4) { got.unpackString() })
        val batch = batchFrame(listOf(BatchItem("a", byteArrayOf(1), msgId = "x"), BatchItem("b", JsonPrimitive("AQ=="), msgId = "y")))
        assertEquals(
            """{"op":"pub","batch":[{"channel":"a","enc":"base64","data":"AQ==","type":"application/octet-stream","msgId":"x"},{"channel":"b","data":"AQ==","msgId":"y"}]}""",
            JsonCodec.encode(batch),
        )
        // The bytes item is a bin, the JSON string item stays a string.
        assertEquals("82a26f70a3707562a562617463689284a76368616e6e656ca161a464617461c40101a474797065b86170706c69636174696f6e2f6f637465742d73747265616da56d73674964a17883a76368616e6e656ca162a464617461a441513d3da56d73674964a179", MsgpackCodec.encode(batch).hex())
    }

    @Test
    fun `binary vectors — base64 on the JSON wire gives the same bytes as binary on the binary one`() {
        val f = Json.parseToJsonElement("""{"op":"msg","channel":"raw","sub":"raw","seq":10,"ts":3,"enc":"base64","data":"AP/+gA=="}""").jsonObject
        val m = toMessage(f, "raw", explicitAck = false) {}
        assertArrayEquals(byteArrayOf(0x00, 0xff.toByte(), 0xfe.toByte(), 0x80.toByte()), m.bytes)
    }

    @Test
    fun `binary vectors — what is not one frame is refused, in either codec`() {
        fun packed(write: org.msgpack.core.MessagePacker.() -> Unit) = MessagePack.newDefaultBufferPacker().apply(write).toByteArray()
        val ping = MsgpackCodec.encode(buildJsonObject { put("op", "ping") }).toByteArray()
        assertNotNull(MsgpackCodec.decodeBinary(ping))
        assertNull(MsgpackCodec.decodeBinary(byteArrayOf(0xc1.toByte())), "never-used byte")
        assertNull(MsgpackCodec.decodeBinary(ping + byteArrayOf(0)), "trailing bytes")
        assertNull(MsgpackCodec.decodeBinary(ping.copyOf(ping.size - 1)), "cut short")
        assertNull(MsgpackCodec.decodeBinary(packed { packArrayHeader(1); packString("op") }), "not a map")
        assertNull(MsgpackCodec.decodeBinary(packed { packMapHeader(1); packInt(1); packString("x") }), "a key that is not a string")
        assertNull(MsgpackCodec.decodeBinary(packed { packMapHeader(2); packString("op"); packString("ok"); packString("data"); packBinaryHeader(1); writePayload(byteArrayOf(1)) }), "bin outside a msg")
        assertNull(MsgpackCodec.decodeBinary(packed { packMapHeader(2); packString("op"); packString("ok"); packString("t"); packExtensionTypeHeader(-1, 4); writePayload(ByteArray(4)) }), "a timestamp")
        val notJson = packed { packMapHeader(2); packString("op"); packString("msg"); packString("data"); packBinaryHeader(2); writePayload("{x".toByteArray()) }
        assertNull(MsgpackCodec.decodeBinary(notJson), "a JSON payload that is not JSON")
        assertNull(MsgpackCodec.decodeText("""{"op":"pong"}"""), "text on the binary wire")
        assertNull(JsonCodec.decodeBinary(ping), "binary on the JSON wire")
        val pong = JsonCodec.decodeText("""{"op":"pong"}""")
        assertEquals(buildJsonObject { put("op", "pong") }, pong?.fields)
        assertEquals("""{"op":"pong"}""", pong?.text)
        assertNull(JsonCodec.decodeText("null"))
    }

    @Test
    fun `binary vectors — a delta's bytes are kept as they came, not parsed`() {
        val delta = "2\n1@0,1:x;".toByteArray()
        val bytes = MessagePack.newDefaultBufferPacker().apply {
            packMapHeader(5)
            packString("op"); packString("msg")
            packString("channel"); packString("a")
            packString("seq"); packLong(2)
            packString("delta"); packBoolean(true)
            packString("data"); packBinaryHeader(delta.size); writePayload(delta)
        }.toByteArray()
        val got = decode(bytes)
        assertArrayEquals(delta, got.payload)
        assertNull(got.fields["data"])
    }

    @Test
    fun `binary vectors — the binary subprotocol is offered on every connect, with a token or without`() {
        fun protocols(token: String?, via: TokenVia, wire: Wire) = connectRequest("ws://h/ws", token, via, wire).header("Sec-WebSocket-Protocol")
        assertEquals("fanout.v1.msgpack", protocols(null, TokenVia.HEADER, Wire.MSGPACK))
        assertEquals("fanout.v1.msgpack", protocols("t", TokenVia.HEADER, Wire.MSGPACK))
        assertEquals("fanout.v1.msgpack", protocols("t", TokenVia.QUERY, Wire.MSGPACK))
        assertEquals("fanout.v1.msgpack, bearer.t", protocols("t", TokenVia.PROTOCOL, Wire.MSGPACK))
        assertNull(protocols("t", TokenVia.HEADER, Wire.JSON))
        assertEquals("fanout.v1, bearer.t", protocols("t", TokenVia.PROTOCOL, Wire.JSON))
    }

    /** Numbers compared by value (1764114000123.456 and 1.764114000123456E12 are one ts), objects by their keys. */
    private fun normal(e: JsonElement): Any = when (e) {
        is JsonObject -> e.mapValues { normal(it.value) }
        is JsonArray -> e.map(::normal)
        is JsonPrimitive -> if (e.isString || e is JsonNull) e else e.contentOrNull?.toBigDecimalOrNull()?.stripTrailingZeros() ?: e
    }

    private fun JsonObject.s(k: String): String? = (this[k] as? JsonPrimitive)?.takeIf { it.isString }?.contentOrNull
}
