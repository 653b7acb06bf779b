package dev.fanout.client

import java.nio.charset.CodingErrorAction
import kotlin.math.abs
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.doubleOrNull
import kotlinx.serialization.json.longOrNull
import org.msgpack.core.MessageIntegerOverflowException
import org.msgpack.core.MessagePack
import org.msgpack.core.MessagePacker
import org.msgpack.core.MessageUnpacker
import org.msgpack.value.ValueType

/**
 * fanout.v1.msgpack's frames over msgpack-core (PROTOCOL.md "Subprotocols"): a frame is the JSON frame's
 * object as a MessagePack map, keys in order, integers in the smallest int format and other numbers float64 (as
 * the gateway and the TypeScript SDK write them: the shared vectors gateway/conformance/vectors/binary-frames.json
 * hold all three to the same bytes). Only a `msg` frame's `data` is bin.
 */
internal object Msgpack {
    /** JavaScript's largest exact integer: whole numbers up to it are written as ints, as JavaScript encoders do. */
    private const val MAX_SAFE_INTEGER = 9_007_199_254_740_991.0

    private val unpackerConfig = MessagePack.UnpackerConfig()
        .withActionOnMalformedString(CodingErrorAction.REPORT)
        .withActionOnUnmappableString(CodingErrorAction.REPORT)

    /** A frame (or any JSON value) as MessagePack bytes. */
    fun encode(value: JsonElement): ByteArray = MessagePack.newDefaultBufferPacker().use { p ->
        pack(p, value)
        p.toByteArray()
    }

    /**
     * A frame as MessagePack bytes. A `pub` or batch item with `"enc":"base64"` (bytes, as the JSON wire carries
     * them: pubFrame) has its `data` written as a bin and no `enc` (PROTOCOL.md "Binary payloads").
     */
    fun encodeFrame(frame: JsonObject): ByteArray = MessagePack.newDefaultBufferPacker().use { p ->
        if ((frame["op"] as? JsonPrimitive)?.content == "pub") packPub(p, frame) else pack(p, frame)
        p.toByteArray()
    }

    private fun packPub(p: MessagePacker, o: JsonObject) {
        val bytes = (o["enc"] as? JsonPrimitive)?.content == "base64"
        p.packMapHeader(if (bytes) o.size - 1 else o.size)
        for ((k, v) in o) {
            if (bytes && k == "enc") continue
            p.packString(k)
            if (bytes && k == "data") {
                val b = base64Bytes((v as JsonPrimitive).content)
                p.packBinaryHeader(b.size)
                p.writePayload(b)
            } else if (k == "batch" && v is JsonArray) {
                p.packArrayHeader(v.size)
                for (i in v) if (i is JsonObject) packPub(p, i) else pack(p, i)
            } else {
                pack(p, v)
            }
        }
    }

    private fun pack(p: MessagePacker, e: JsonElement) {
        when (e) {
            is JsonNull -> p.packNil()
            is JsonObject -> {
                p.packMapHeader(e.size)
                for ((k, v) in e) {
                    p.packString(k)
                    pack(p, v)
                }
            }
            is JsonArray -> {
                p.packArrayHeader(e.size)
                for (v in e) pack(p, v)
            }
            is JsonPrimitive -> when {
                e.isString -> p.packString(e.content)
                e.booleanOrNull != null -> p.packBoolean(e.booleanOrNull!!)
                else -> packNumber(p, e)
            }
        }
    }

    private fun packNumber(p: MessagePacker, e: JsonPrimitive) {
        val l = e.longOrNull
        if (l != null) {
            p.packLong(l)
            return
        }
        val d = e.doubleOrNull ?: throw IllegalArgumentException("not a JSON number: ${e.content}")
        if (d % 1.0 == 0.0 && abs(d) <= MAX_SAFE_INTEGER) p.packLong(d.toLong()) else p.packDouble(d)
    }

    /**
     * A frame from its bytes, or null when they are not exactly one MessagePack map with string keys and
     * JSON values (bin only as a `msg` frame's `data`). A `msg` frame's JSON payload (bin without `enc`, not a
     * delta) is parsed into `data`, as the JSON wire has it; its bytes stay in [ReceivedFrame.payload]. Bytes
     * that declare more than they hold, or nest deeper than [MAX_FRAME_DEPTH], are refused before decoding (Bounds).
     */
    fun decodeFrame(bytes: ByteArray): ReceivedFrame? = if (!Bounds.msgpackFits(bytes)) null else try {
        unpackerConfig.newUnpacker(bytes).use { u -> readFrame(u)?.takeIf { !u.hasNext() } }
    } catch (e: Exception) {
        null // MessagePack that is not one frame, strings that are not UTF-8, a JSON payload that is not JSON
    }

    /** A binary WebSocket frame's frames: one map, or an array of maps (a coalesced frame, PROTOCOL.md "Coalesced frames"). */
    fun decodeFrames(bytes: ByteArray): List<ReceivedFrame>? = if (!Bounds.msgpackFits(bytes)) null else try {
        unpackerConfig.newUnpacker(bytes).use { u ->
            val frames = if (u.nextFormat.valueType == ValueType.ARRAY) List(u.unpackArrayHeader()) { readFrame(u) ?: return null } else listOf(readFrame(u) ?: return null)
            frames.takeIf { !u.hasNext() }
        }
    } catch (e: Exception) {
        null
    }

    private fun readFrame(u: MessageUnpacker): ReceivedFrame? {
        if (u.nextFormat.valueType != ValueType.MAP) return null
        val n = u.unpackMapHeader()
        val fields = LinkedHashMap<String, JsonElement>()
        var payload: ByteArray? = null
        repeat(n) {
            val key = key(u)
            if (key == "data" && u.nextFormat.valueType == ValueType.BINARY) payload = u.readPayload(u.unpackBinaryHeader()) else fields[key] = value(u)
        }
        val p = payload ?: return ReceivedFrame(JsonObject(fields))
        if ((fields["op"] as? JsonPrimitive)?.content != "msg") return null
        val delta = (fields["delta"] as? JsonPrimitive)?.booleanOrNull == true
        if (fields["enc"] == null && !delta) fields["data"] = Bounds.parseJson(p.decodeToString(throwOnInvalidSequence = true), MAX_FRAME_DEPTH - 1)
        return ReceivedFrame(JsonObject(fields), p)
    }

    private fun key(u: MessageUnpacker): String {
        if (u.nextFormat.valueType != ValueType.STRING) throw IllegalArgumentException("a map key that is not a string")
        return u.unpackString()
    }

    private fun value(u: MessageUnpacker): JsonElement = when (u.nextFormat.valueType) {
        ValueType.NIL -> JsonNull.also { u.unpackNil() }
        ValueType.BOOLEAN -> JsonPrimitive(u.unpackBoolean())
        ValueType.INTEGER -> try {
            JsonPrimitive(u.unpackLong())
        } catch (e: MessageIntegerOverflowException) {
            JsonPrimitive(e.bigInteger)
        }
        ValueType.FLOAT -> u.unpackDouble().let { d -> if (d % 1.0 == 0.0 && abs(d) <= MAX_SAFE_INTEGER) JsonPrimitive(d.toLong()) else JsonPrimitive(d) }
        ValueType.STRING -> JsonPrimitive(u.unpackString())
        ValueType.ARRAY -> JsonArray(List(u.unpackArrayHeader()) { value(u) })
        ValueType.MAP -> {
            val n = u.unpackMapHeader()
            JsonObject(LinkedHashMap<String, JsonElement>().apply { repeat(n) { put(key(u), value(u)) } })
        }
        else -> throw IllegalArgumentException("a ${u.nextFormat.valueType} where JSON has no such value")
    }
}
