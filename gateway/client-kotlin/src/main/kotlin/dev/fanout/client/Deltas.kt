package dev.fanout.client

import java.nio.ByteBuffer
import java.nio.charset.CharacterCodingException
import java.nio.charset.CodingErrorAction
import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.longOrNull

/** Bases kept per subscription by default: a server keeps at most as many channels per subscription. */
const val MAX_DELTA_CHANNELS = 1_000

/** What a `msg` frame of a `delta: "fossil"` subscription gives. */
sealed interface DeltaOutcome {
    /** The message's data, as a full message of the same payload would have carried it. */
    data class Message(val data: JsonElement) : DeltaOutcome

    /** No base for the delta (`no_base`) or a delta that does not apply (`bad_delta`): subscribe again from the position. */
    data class Resubscribe(val reason: String) : DeltaOutcome
}

/** What [DeltaBases.apply] made of a delta. */
sealed interface Applied {
    class Payload(val bytes: ByteArray) : Applied

    data class Lost(val reason: String) : Applied
}

/**
 * A `delta: "fossil"` subscription's bases (PROTOCOL.md "Deltas"): the last payload and its
 * seq per channel, at most [maxChannels] (the oldest goes first). A full `msg` sets the channel's base; a
 * delta `msg` (`"delta":true,"base":B`) applies to the base when the base's seq is B, and otherwise asks to
 * resubscribe, so the application never sees wrong data. The same rules as the TypeScript SDK's DeltaBases.
 */
class DeltaBases(private val maxChannels: Int = MAX_DELTA_CHANNELS) {
    private class Base(val seq: Long, val payload: ByteArray)

    private val bases = LinkedHashMap<String, Base>()

    val size: Int get() = bases.size

    /**
     * The outcome of a `msg` frame [f]: on fanout.v1 received as [text] (a full message's base is its exact `data`
     * text); on fanout.v1.msgpack with its `data` bytes as [payload] (the stored payload, or the delta).
     */
    fun receive(f: JsonObject, text: String?, payload: ByteArray? = null): DeltaOutcome {
        val channel = f.str("channel") ?: throw IllegalArgumentException("msg without channel")
        val seq = (f["seq"] as? JsonPrimitive)?.longOrNull ?: throw IllegalArgumentException("msg without seq")
        if ((f["delta"] as? JsonPrimitive)?.booleanOrNull == true) {
            val baseSeq = (f["base"] as? JsonPrimitive)?.longOrNull ?: return lost(channel, "no_base")
            val payload = when (val applied = apply(channel, seq, baseSeq, payload ?: deltaBytes(f))) {
                is Applied.Payload -> applied.bytes
                is Applied.Lost -> return DeltaOutcome.Resubscribe(applied.reason)
            }
            return try {
                DeltaOutcome.Message(Bounds.parseJson(utf8Strict(payload), MAX_FRAME_DEPTH - 1))
            } catch (e: SerializationException) {
                lost(channel, "bad_delta") // the server makes deltas of JSON payloads only
            } catch (e: CharacterCodingException) {
                lost(channel, "bad_delta")
            }
        }
        full(channel, seq, payload ?: payloadBytes(f, text ?: throw IllegalArgumentException("msg frame without its text")))
        return DeltaOutcome.Message(f["data"] ?: throw IllegalArgumentException("msg without data"))
    }

    /** A full message of [channel]: its payload is the channel's base from now on. */
    fun full(channel: String, seq: Long, payload: ByteArray) {
        if (!bases.containsKey(channel) && bases.size >= maxChannels) bases.remove(bases.keys.first())
        bases[channel] = Base(seq, payload)
    }

    /** The payload a delta against base [baseSeq] makes (it becomes the base), or why there is none. */
    fun apply(channel: String, seq: Long, baseSeq: Long, delta: ByteArray): Applied {
        val base = bases[channel]
        if (base == null || base.seq != baseSeq) {
            bases.remove(channel)
            return Applied.Lost("no_base")
        }
        val payload = try {
            Fossil.apply(base.payload, delta)
        } catch (e: FossilDeltaException) {
            bases.remove(channel)
            return Applied.Lost("bad_delta")
        }
        bases[channel] = Base(seq, payload)
        return Applied.Payload(payload)
    }

    /** Forgets every base: the subscription is made again (the server starts each channel full). */
    fun reset() = bases.clear()

    private fun lost(channel: String, reason: String): DeltaOutcome {
        bases.remove(channel)
        return DeltaOutcome.Resubscribe(reason)
    }
}

/** The payload bytes of a full `msg` frame: the raw text of `data` (spliced in as stored, written last), or the string / base64 it carries. */
fun payloadBytes(f: JsonObject, text: String): ByteArray = when (f.str("enc")) {
    "text" -> (f.str("data") ?: "").toByteArray(Charsets.UTF_8)
    "base64" -> base64Bytes(f.str("data") ?: "")
    else -> {
        val at = text.indexOf("\"data\":")
        require(at >= 0 && text.endsWith("}")) { "msg frame without data last" }
        text.substring(at + 7, text.length - 1).toByteArray(Charsets.UTF_8)
    }
}

/** The delta of a delta `msg` frame: its string's UTF-8 bytes, or base64 with `"enc":"base64"`. */
fun deltaBytes(f: JsonObject): ByteArray {
    val data = f.str("data") ?: ""
    return if (f.str("enc") == "base64") base64Bytes(data) else data.toByteArray(Charsets.UTF_8)
}

private fun utf8Strict(b: ByteArray): String =
    Charsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString()
