package dev.fanout.client

import java.io.File
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test

/** The SDK's code table is the generated gateway/src/protocol/codes.json, which `npm run build` writes. */
class CodesTest {
    private val codes = Json.parseToJsonElement(File("../src/protocol/codes.json").readText()).jsonObject

    @Test
    fun `codes — every wire error code and whether it is temporary, as codes json has them`() {
        val want = codes.getValue("errors").jsonObject.mapValues { it.value.jsonObject.getValue("temporary").jsonPrimitive.boolean }
        assertEquals(want, WIRE_CODES)
    }

    @Test
    fun `codes — the subprotocol and the close codes the client acts on`() {
        assertEquals(codes.getValue("subprotocol").jsonPrimitive.content, SUBPROTOCOL)
        val close = codes.getValue("closeCodes").jsonObject
        assertEquals(4001, close.getValue("TokenExpired").jsonPrimitive.int)
        assertEquals(4403, close.getValue("DisconnectedFinal").jsonPrimitive.int)
    }
}
