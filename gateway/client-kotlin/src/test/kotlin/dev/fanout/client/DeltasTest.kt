package dev.fanout.client

import java.io.File
import java.util.Base64
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory

/** The Fossil applier and the delta bases, held to the shared vectors (gateway/conformance/vectors/fossil.json) the TypeScript SDK reads too. */
class DeltasTest {
    private val vectors = Json.parseToJsonElement(File("../conformance/vectors/fossil.json").readText()).jsonObject

    private fun bytes(v: JsonObject): ByteArray =
        v["text"]?.jsonPrimitive?.content?.toByteArray(Charsets.UTF_8) ?: Base64.getDecoder().decode(v.getValue("base64").jsonPrimitive.content)

    private fun JsonObject.bytesOf(key: String) = bytes(getValue(key).jsonObject)

    private fun cases(kind: String) = vectors.getValue(kind).jsonArray.map { it.jsonObject }

    @TestFactory
    fun vectorsApply() = cases("cases").map { v ->
        DynamicTest.dynamicTest("deltas — vector applies: ${v.str("name")}") {
            assertArrayEquals(v.bytesOf("target"), Fossil.apply(v.bytesOf("base"), v.bytesOf("delta")))
            val bases = DeltaBases()
            bases.full("c", 1, v.bytesOf("base"))
            val applied = bases.apply("c", 2, 1, v.bytesOf("delta"))
            assertArrayEquals(v.bytesOf("target"), (applied as Applied.Payload).bytes)
        }
    }

    @TestFactory
    fun brokenRefused() = cases("broken").map { v ->
        DynamicTest.dynamicTest("deltas — broken vector is refused, never applied: ${v.str("name")}") {
            assertThrows(FossilDeltaException::class.java) { Fossil.apply(v.bytesOf("base"), v.bytesOf("delta")) }
            val bases = DeltaBases()
            bases.full("c", 1, v.bytesOf("base"))
            assertEquals(Applied.Lost("bad_delta"), bases.apply("c", 2, 1, v.bytesOf("delta")))
            assertEquals(Applied.Lost("no_base"), bases.apply("c", 3, 2, v.bytesOf("delta")))
            // And from a delta frame as the server writes it (text, or base64 when the delta is not UTF-8).
            val framed = DeltaBases()
            framed.full("s", 1, v.bytesOf("base"))
            val (f, text) = deltaFrame(2, 1, v.bytesOf("delta"))
            assertEquals(DeltaOutcome.Resubscribe("bad_delta"), framed.receive(f, text))
        }
    }

    @Test
    fun `deltas — the shared vectors hold every kind of refusal (so the tests above cannot pass on an empty list)`() {
        val broken = cases("broken")
        assertEquals(
            setOf("truncated", "checksum", "copy", "insert", "size", "header", "operator", "garbage", "empty"),
            broken.map { it.str("why") }.toSet(),
        )
        assertTrue(broken.count { it.str("why") == "truncated" } >= 6, "truncated at several points")
    }

    @Test
    fun `deltas — a target larger than the limit is refused before it is allocated`() {
        assertThrows(FossilDeltaException::class.java) { Fossil.apply(ByteArray(0), "~~~~~\n0;".toByteArray(), maxSize = 1_024) }
    }

    private fun frame(text: String) = Json.parseToJsonElement(text).jsonObject to text

    private fun deltaFrame(seq: Long, base: Long, delta: ByteArray): Pair<JsonObject, String> {
        val text = String(delta, Charsets.UTF_8)
        val data = if (text.toByteArray(Charsets.UTF_8).contentEquals(delta)) Json.encodeToString(kotlinx.serialization.json.JsonPrimitive(text))
        else "\"${Base64.getEncoder().encodeToString(delta)}\",\"enc\":\"base64\""
        return frame("""{"op":"msg","channel":"s","sub":"s","seq":$seq,"ts":1,"delta":true,"base":$base,"data":$data}""")
    }

    @Test
    fun `deltas — a full frame's base is the exact data text, and a delta of the vectors gives the next data`() {
        val scoreboard = cases("cases").first { it.str("name")!!.startsWith("scoreboard") }
        val base = String(scoreboard.bytesOf("base"), Charsets.UTF_8)
        val target = String(scoreboard.bytesOf("target"), Charsets.UTF_8)
        val bases = DeltaBases()
        val (full, fullText) = frame("""{"op":"msg","channel":"s","sub":"s","seq":7,"ts":1,"data":$base}""")
        assertEquals(DeltaOutcome.Message(Json.parseToJsonElement(base)), bases.receive(full, fullText))
        val (d, dText) = deltaFrame(9, 7, scoreboard.bytesOf("delta"))
        assertEquals(DeltaOutcome.Message(Json.parseToJsonElement(target)), bases.receive(d, dText))
        assertEquals(DeltaOutcome.Resubscribe("no_base"), bases.receive(d, dText)) // the base is 9 now, not 7
    }

    @Test
    fun `deltas — spacing and number forms of the stored payload are kept byte for byte`() {
        val stored = """{ "b": 1.50, "a": "\u00e9" ,"z":[ ] }"""
        val (f, text) = frame("""{"op":"msg","channel":"s","sub":"s","seq":1,"ts":1,"data":$stored}""")
        assertEquals(stored, String(payloadBytes(f, text), Charsets.UTF_8))
        val (t, tText) = frame("""{"op":"msg","channel":"s","sub":"s","seq":2,"ts":1,"enc":"base64","data":"AP+ACg=="}""")
        assertArrayEquals(byteArrayOf(0, -1, -128, 10), payloadBytes(t, tText))
    }

    @Test
    fun `deltas — a delta without its base asks to resubscribe, also after reset or past the bound`() {
        val notUtf8 = cases("cases").first { it.str("name")!!.contains("not UTF-8") }
        val bases = DeltaBases(maxChannels = 2)
        val (d, dText) = deltaFrame(2, 1, notUtf8.bytesOf("delta"))
        assertEquals("base64", d.str("enc"))
        bases.full("s", 1, notUtf8.bytesOf("base"))
        assertEquals(DeltaOutcome.Message(Json.parseToJsonElement(String(notUtf8.bytesOf("target"), Charsets.UTF_8))), bases.receive(d, dText))
        bases.reset()
        assertEquals(DeltaOutcome.Resubscribe("no_base"), bases.receive(d, dText))
        bases.full("s", 1, notUtf8.bytesOf("base"))
        bases.reset()
        assertEquals(DeltaOutcome.Resubscribe("no_base"), bases.receive(d, dText))
        bases.full("s", 1, notUtf8.bytesOf("base"))
        bases.full("t", 1, notUtf8.bytesOf("base"))
        bases.full("u", 1, notUtf8.bytesOf("base"))
        assertEquals(2, bases.size)
        assertEquals(DeltaOutcome.Resubscribe("no_base"), bases.receive(d, dText))
    }
}
