package dev.fanout.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.jsonObject
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Test

class BinaryTest {
    private fun message(text: String) = toMessage(Json.parseToJsonElement(text).jsonObject, "s", explicitAck = false) {}

    @Test
    fun `binary — a msg with a type gives its content type and bytes, one without has no type`() {
        val m = message("""{"op":"msg","channel":"s","sub":"s","seq":1,"ts":1,"enc":"base64","type":"image/png","data":"AP8B"}""")
        assertEquals("image/png", m.type)
        assertArrayEquals(byteArrayOf(0, -1, 1), m.bytes)
        val legacy = message("""{"op":"msg","channel":"s","sub":"s","seq":2,"ts":1,"enc":"base64","data":"AP8B"}""")
        assertNull(legacy.type)
        assertArrayEquals(byteArrayOf(0, -1, 1), legacy.bytes)
        assertNull(message("""{"op":"msg","channel":"s","sub":"s","seq":3,"ts":1,"data":{"a":1}}""").bytes)
    }
}
