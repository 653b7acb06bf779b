package dev.fanout.client

import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonPrimitive

/** Where a subscription starts (PROTOCOL.md `sub`); live when none is given. */
sealed interface StartPosition {
    /** Every message with stream sequence ≥ [seq]; [epoch] names the stream the seq belongs to. */
    data class Seq(val seq: Long, val epoch: String? = null) : StartPosition

    /**
     * From that instant, in milliseconds since the epoch (UTC); on API 26+ `Time(instant.toEpochMilli())`. A
     * plain number keeps java.time (Android API 26) off every path of the SDK.
     */
    data class Time(val epochMs: Long) : StartPosition

    /** The pattern's last [count] messages. */
    data class Last(val count: Int) : StartPosition

    /** Everything the stream holds. */
    data object All : StartPosition

    /** The newest message of every matching channel, then live. */
    data object LastPerSubject : StartPosition
}

/**
 * Where an app is in a subscription's stream: the [seq] of the last message it was handed and the [epoch] of
 * the stream it belongs to. Save it once that message is handled; [next] is where a later subscribe resumes.
 */
data class StreamPosition(val seq: Long, val epoch: String?) {
    /** The start of a subscribe that goes on after this message, without gap or duplicate. */
    fun next(): StartPosition.Seq = StartPosition.Seq(seq + 1, epoch)
}

/** Presence of a concrete channel: [MEMBER_AND_WATCH] enters and receives joins/leaves; the others one of the two. */
enum class Presence { MEMBER_AND_WATCH, MEMBER, WATCH }

/** How `subscribe` subscribes (PROTOCOL.md `sub`). */
data class SubscribeOptions @JvmOverloads constructor(
    /** Start of the first subscribe; later resubscribes resume from the last delivered seq + 1. */
    val from: StartPosition? = null,
    /** Durable consumer name (at-least-once; `from` is not allowed with it). */
    val durable: String? = null,
    /** Explicit acks for a durable: messages get working ack()/nak()/term()/inProgress(). */
    val ack: Boolean = false,
    /** Ack each message once the Flow's collector returned from it, nak when it threw. Default: [ack]. */
    val autoAck: Boolean? = null,
    val maxInflight: Int? = null,
    val presence: Presence? = null,
    /** With [Presence.MEMBER_AND_WATCH] or [Presence.MEMBER]: shown to the other members (at most 1 KiB). */
    val info: JsonElement? = null,
    /** With [Presence.MEMBER_AND_WATCH] or [Presence.WATCH]: every join and leave of the channel (its own too). */
    val onPresence: ((PresenceEvent) -> Unit)? = null,
    /**
     * `"fossil"`: after each channel's first message the server may send Fossil deltas against the previous one
     * (PROTOCOL.md "Deltas"); the client applies them and the Flow gets whole messages. Not with [durable].
     */
    val delta: String? = null,
)

/** The server's `ok` to a subscribe: stream bounds, and `truncated` when the start was already removed. */
data class SubscribeInfo(
    val firstSeq: Long? = null,
    val lastSeq: Long? = null,
    val truncated: Boolean = false,
    val epoch: String? = null,
    val epochChanged: Boolean = false,
    /** With presence: this connection's presence id in the channel. */
    val client: String? = null,
)

data class PublishResult(val seq: Long, val duplicate: Boolean)

/** The content type of bytes published without one. */
const val OCTET_STREAM = "application/octet-stream"

/**
 * One item of `publishBatch`; [ttl] ("30s") where the namespace's stream allows per-message TTLs. With [type]
 * the item is bytes (PROTOCOL.md "Binary payloads"): [data] is their base64, [type] their content type; build
 * it from the bytes with the second constructor.
 */
data class BatchItem(val channel: String, val data: JsonElement, val msgId: String? = null, val ttl: String? = null, val type: String? = null) {
    /** An item of bytes, [type] their content type. */
    constructor(channel: String, bytes: ByteArray, type: String = OCTET_STREAM, msgId: String? = null, ttl: String? = null) :
        this(channel, JsonPrimitive(bytes.toBase64()), msgId, ttl, type)
}

/** One item's outcome in a batch, in the item's place: stored, or the server's error for that item alone. */
sealed interface BatchItemResult {
    data class Stored(val seq: Long, val duplicate: Boolean) : BatchItemResult

    data class Failed(val error: GatewayException) : BatchItemResult
}

/** A presence member (PROTOCOL.md `presence`). [user] is null without authentication. */
data class PresenceMember(val client: String, val user: String?, val info: JsonElement?, val joinedAt: Long)

data class PresenceList(val members: List<PresenceMember>, val truncated: Boolean)

/** A join or leave of a channel the subscription is present in. */
data class PresenceEvent(val type: Type, val channel: String, val client: String, val user: String?, val info: JsonElement?) {
    enum class Type { JOIN, LEAVE }
}

/**
 * A stored message as history answers it: [data] as on the JSON wire; [enc] "text" or "base64" for a payload
 * that is not JSON, [type] a binary payload's content type, and [bytes] the bytes of a "base64" one.
 */
data class HistoryMessage(
    val seq: Long,
    val ts: Double,
    val channel: String,
    val data: JsonElement,
    val enc: String? = null,
    val type: String? = null,
    val bytes: ByteArray? = null,
)

/**
 * One page of history (newest first when read with `reverse`); [next], when the page stopped before the
 * channel's end (by `limit` or the server's size bound), is the `fromSeq` of the rest — with `reverse`, the
 * `beforeSeq` of the older page.
 */
data class HistoryPage(val messages: List<HistoryMessage>, val firstSeq: Long?, val lastSeq: Long?, val next: Long?)
