package dev.fanout.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

class OptionsTest {
    @Test
    fun `options — a bad number is refused with bad_option when the client is made`() {
        val e = assertThrows<GatewayException> { GatewayClient("ws://127.0.0.1:1/ws") { minDelayMs = 500; maxDelayMs = 100 } }
        assertEquals("bad_option", e.code)
        assertEquals(false, e.temporary)
        assertEquals("bad_option", assertThrows<GatewayException> { GatewayClient("ws://127.0.0.1:1/ws") { pingTimeoutMs = 0 } }.code)
        for (bad in listOf<GatewayClientOptions.() -> Unit>({ publishTimeoutMs = 0 }, { rpcTimeoutMs = -1 }, { historyTimeoutMs = 0 })) {
            assertEquals("bad_option", assertThrows<GatewayException> { GatewayClient("ws://127.0.0.1:1/ws", bad) }.code)
        }
    }

    @Test
    fun `token — in the Authorization header by default, as a subprotocol or in the query when asked`() {
        val header = connectRequest("ws://h:1/ws", "T", TokenVia.HEADER)
        assertEquals("Bearer T", header.header("Authorization"))
        assertNull(header.header("Sec-WebSocket-Protocol"))
        assertEquals("fanout.v1, bearer.T", connectRequest("wss://h/ws", "T", TokenVia.PROTOCOL).header("Sec-WebSocket-Protocol"))
        assertEquals("T", connectRequest("http://h:1/ws?x=1", "T", TokenVia.QUERY).url.queryParameter("token"))
        assertNull(connectRequest("ws://h:1/ws", null, TokenVia.HEADER).header("Authorization"))
    }

    @Test
    fun `coalesce — every connect says coalesce=1, and a coalesced JSON frame splits at the three bytes only`() {
        assertEquals("1", connectRequest("ws://h:1/ws", null, TokenVia.HEADER).url.queryParameter("coalesce"))
        assertEquals("1", connectRequest("ws://h:1/ws?x=1", "T", TokenVia.QUERY).url.queryParameter("coalesce"))
        val pretty = "{\"op\":\"msg\",\"seq\":1,\"data\":{\n  \"a\": [{\"b\": \"}\\n{\"}, {}]\n}}"
        val one = "{\"op\":\"msg\",\"seq\":2,\"data\":2}"
        assertEquals(listOf(pretty, one, one), splitCoalesced("$pretty\n$one\n$one"))
        assertEquals(listOf(pretty), splitCoalesced(pretty))
        val frames = JsonCodec.framesOfText("$pretty\n$one")!!
        assertEquals(listOf("1", "2"), frames.map { it.fields["seq"].toString() })
        assertEquals(pretty, frames[0].text)
        assertNull(JsonCodec.framesOfText("$one\n{\"op\":"))
    }

    @Test
    fun `coalesce — a MessagePack array is its maps in order, a lone map one frame`() {
        fun msg(p: org.msgpack.core.MessageBufferPacker, seq: Int) {
            p.packMapHeader(3).packString("op").packString("msg").packString("seq").packInt(seq).packString("data")
            val json = "{\"n\":$seq}".toByteArray()
            p.packBinaryHeader(json.size).writePayload(json)
        }
        val array = org.msgpack.core.MessagePack.newDefaultBufferPacker().use { p -> p.packArrayHeader(3); (1..3).forEach { msg(p, it) }; p.toByteArray() }
        val frames = MsgpackCodec.framesOfBinary(array)!!
        assertEquals(listOf("1", "2", "3"), frames.map { it.fields["seq"].toString() })
        assertEquals("{\"n\":2}", frames[1].fields["data"].toString())
        val lone = org.msgpack.core.MessagePack.newDefaultBufferPacker().use { p -> msg(p, 7); p.toByteArray() }
        assertEquals(1, MsgpackCodec.framesOfBinary(lone)!!.size)
        assertNull(MsgpackCodec.framesOfBinary(array + byteArrayOf(0)))
    }

    @Test
    fun `history — the URL is the socket's origin with the channel percent-encoded and the query asked`() {
        val base = okhttp3.HttpUrl.Builder().scheme("http").host("h").port(9000).encodedPath("/ws").build()
        assertEquals("http://h:9000/v1/channels/orders.eu/messages?from_seq=5&limit=2", historyUrl(base, "orders.eu", 5, null, 2).toString())
        assertEquals("http://h:9000/v1/channels/a%20b/messages?last=3", historyUrl(base, "a b", null, 3, null).toString())
    }
}
