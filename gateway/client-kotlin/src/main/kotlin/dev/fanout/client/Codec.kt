package dev.fanout.client

import kotlinx.serialization.json.JsonObject
import okhttp3.WebSocket
import okio.ByteString
import okio.ByteString.Companion.toByteString

/** The subprotocol of wire protocol version 1 (PROTOCOL.md "Passing the token"). */
const val SUBPROTOCOL = "fanout.v1"

/** The same protocol in binary frames, one MessagePack map each (PROTOCOL.md "Subprotocols"). */
const val SUBPROTOCOL_MSGPACK = "fanout.v1.msgpack"

/** How frames travel on the socket ([GatewayClientOptions.wire]). */
enum class Wire(val subprotocol: String) {
    /** `fanout.v1`: one JSON text frame per frame (the default). */
    JSON(SUBPROTOCOL),

    /** `fanout.v1.msgpack`: one binary MessagePack frame per frame; smaller, and payloads that are not JSON come as bytes. */
    MSGPACK(SUBPROTOCOL_MSGPACK),
}

/**
 * A frame the server sent, as every wire gives it: [fields] is the JSON frame's object (a `msg` frame's JSON
 * payload parsed into `data`), and [payload] a `msg` frame's `data` bytes exactly as they came when the wire
 * carried bytes (fanout.v1.msgpack: the JSON text, other bytes with `enc: "binary"`, or a delta); null otherwise.
 * On fanout.v1, [text] is the frame as received (where a full message's payload is its exact `data` text,
 * the base of a delta: DeltaBases.receive).
 */
class ReceivedFrame(val fields: JsonObject, val payload: ByteArray? = null, val text: String? = null)

/**
 * One connection's encoding: every frame the client writes goes through [send], every frame it reads through
 * [decodeText] or [decodeBinary] (null: not a frame of this codec's subprotocol).
 */
internal interface Codec {
    val wire: Wire

    fun encode(frame: JsonObject): Any

    fun decodeText(text: String): ReceivedFrame?

    fun decodeBinary(bytes: ByteArray): ReceivedFrame?

    /** A text WebSocket frame's frames, in order: several when the server coalesced them (Coalesced.kt); null: not this codec's. */
    fun framesOfText(text: String): List<ReceivedFrame>?

    /** A binary WebSocket frame's frames, in order: several when the server coalesced them; null: not this codec's. */
    fun framesOfBinary(bytes: ByteArray): List<ReceivedFrame>?

    /** False when the socket is closing. */
    fun send(ws: WebSocket, frame: JsonObject): Boolean = when (val e = encode(frame)) {
        is String -> ws.send(e)
        is ByteString -> ws.send(e)
        else -> error("codec wrote ${e::class}")
    }
}

/** fanout.v1: JSON text frames (nested at most [MAX_FRAME_DEPTH] deep); binary frames are not frames of it. */
internal object JsonCodec : Codec {
    override val wire = Wire.JSON

    override fun encode(frame: JsonObject): String = frame.toString()

    override fun decodeText(text: String): ReceivedFrame? {
        val f = try {
            Bounds.parseJson(text) as? JsonObject
        } catch (e: Exception) {
            null
        }
        return f?.let { ReceivedFrame(it, text = text) }
    }

    override fun decodeBinary(bytes: ByteArray): ReceivedFrame? = null

    override fun framesOfText(text: String): List<ReceivedFrame>? = splitCoalesced(text).map { decodeText(it) ?: return null }

    override fun framesOfBinary(bytes: ByteArray): List<ReceivedFrame>? = null
}

/** fanout.v1.msgpack: binary MessagePack frames (Msgpack.kt); text frames are not frames of it. */
internal object MsgpackCodec : Codec {
    override val wire = Wire.MSGPACK

    override fun encode(frame: JsonObject): ByteString = Msgpack.encodeFrame(frame).toByteString()

    override fun decodeText(text: String): ReceivedFrame? = null

    override fun decodeBinary(bytes: ByteArray): ReceivedFrame? = Msgpack.decodeFrame(bytes)

    override fun framesOfText(text: String): List<ReceivedFrame>? = null

    override fun framesOfBinary(bytes: ByteArray): List<ReceivedFrame>? = Msgpack.decodeFrames(bytes)
}

/** The codec of [wire]. */
internal fun codecOf(wire: Wire): Codec = when (wire) {
    Wire.JSON -> JsonCodec
    Wire.MSGPACK -> MsgpackCodec
}
