package dev.fanout.client

import java.text.SimpleDateFormat
import java.util.Date
import java.util.Locale
import java.util.TimeZone
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonObjectBuilder
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.doubleOrNull
import kotlinx.serialization.json.longOrNull
import kotlinx.serialization.json.put

// Every frame the client writes and every frame it reads, in one place: pure functions from values to JSON and
// back, held to the shared vectors (gateway/conformance/vectors/frames.json) that the TypeScript SDK reads too.

/** The `sub` frame that (re)starts a subscription, and the seq a gap would be measured from. */
data class SubscribeFrame(val frame: JsonObject, val expectedSeq: Long?)

/**
 * The `sub` frame for [channel]: after a delivered message (or for a taken-over server-side subscription,
 * [resumes]) it resumes from the next seq with the epoch it belongs to; before, it asks for [SubscribeOptions.from].
 */
fun subscribeFrame(channel: String, opts: SubscribeOptions, pos: Position, resumes: Boolean = false): SubscribeFrame {
    if (opts.durable != null) {
        return SubscribeFrame(
            buildJsonObject {
                put("op", "sub")
                put("channel", channel)
                put("durable", opts.durable)
                if (opts.ack) put("ack", true)
                opts.maxInflight?.let { put("maxInflight", it) }
            },
            null,
        )
    }
    // The epoch names the stream the seq belongs to: a recreated stream is reported, not misread.
    val from = if (pos.lastSeq > 0 || resumes) StartPosition.Seq(pos.lastSeq + 1, pos.epoch) else opts.from
    val frame = buildJsonObject {
        put("op", "sub")
        put("channel", channel)
        when (opts.presence) {
            Presence.MEMBER_AND_WATCH -> put("presence", true)
            Presence.MEMBER -> put("presence", "member")
            Presence.WATCH -> put("presence", "watch")
            null -> {}
        }
        if (opts.info != null && opts.presence != null && opts.presence != Presence.WATCH) put("info", opts.info)
        if (opts.delta != null) put("delta", opts.delta)
        if (from != null) put("from", startJson(from))
    }
    return SubscribeFrame(frame, (from as? StartPosition.Seq)?.seq)
}

/**
 * [epochMs] in UTC with milliseconds, as JavaScript's toISOString writes it: both SDKs send the same frame. A
 * formatter per call (SimpleDateFormat is not thread-safe), on the rare subscribe from a time only.
 */
internal fun isoMillis(epochMs: Long): String =
    SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", Locale.ROOT).apply { timeZone = TimeZone.getTimeZone("UTC") }.format(Date(epochMs))

/** A start position as the wire has it. */
fun startJson(from: StartPosition): JsonElement = when (from) {
    is StartPosition.Seq -> buildJsonObject {
        put("seq", from.seq)
        if (from.epoch != null) put("epoch", from.epoch)
    }
    is StartPosition.Time -> buildJsonObject { put("time", isoMillis(from.epochMs)) }
    is StartPosition.Last -> buildJsonObject { put("last", from.count) }
    StartPosition.All -> JsonPrimitive("all")
    StartPosition.LastPerSubject -> JsonPrimitive("last_per_subject")
}

/** What the server's `ok` to a subscribe says, and the `gap` to report when the resume point is gone. */
data class OkOutcome(val info: SubscribeInfo, val gap: GatewayEvent.Gap?)

/**
 * Takes the server's `ok` to a subscribe into [pos]: a recreated stream (`epochChanged`) starts the seqs over,
 * the epoch is remembered.
 */
fun acceptOk(channel: String, pos: Position, reply: JsonObject, expectedSeq: Long?): OkOutcome {
    val epochChanged = reply.bool("epochChanged")
    if (epochChanged) pos.reset()
    reply.str("epoch")?.let { pos.epoch = it }
    val truncated = reply.bool("truncated")
    val firstSeq = reply.long("firstSeq")
    val gap = if (truncated && expectedSeq != null) GatewayEvent.Gap(channel, expectedSeq, firstSeq ?: 0, epochChanged) else null
    val info = SubscribeInfo(firstSeq, reply.long("lastSeq"), truncated, reply.str("epoch"), epochChanged, reply.str("client"))
    return OkOutcome(info, gap)
}

/**
 * The `pub` frame of one publish (without its request id). With [type], [data] is bytes in base64 and the frame
 * says so (`"enc":"base64"`, as fanout.v1 carries bytes); fanout.v1.msgpack writes them as a bin (Msgpack.kt).
 */
fun pubFrame(channel: String, data: JsonElement, msgId: String, ttl: String? = null, type: String? = null): JsonObject = buildJsonObject {
    put("op", "pub")
    pubFields(channel, data, msgId, ttl, type)
}

private fun JsonObjectBuilder.pubFields(channel: String, data: JsonElement, msgId: String, ttl: String?, type: String?) {
    put("channel", channel)
    if (type != null) put("enc", "base64")
    put("data", data)
    if (type != null) put("type", type)
    put("msgId", msgId)
    if (ttl != null) put("ttl", ttl)
}

/** The `pub` frame of a batch; every item has its msgId by now. */
fun batchFrame(items: List<BatchItem>): JsonObject = buildJsonObject {
    put("op", "pub")
    put(
        "batch",
        buildJsonArray {
            for (i in items) add(buildJsonObject { pubFields(i.channel, i.data, i.msgId ?: error("batch item without msgId"), i.ttl, i.type) })
        },
    )
}

/** The server's answer to one publish. */
fun publishResult(reply: JsonObject): PublishResult =
    if (reply.str("op") == "ok") PublishResult(reply.long("seq") ?: 0, reply.bool("duplicate")) else throw wireError(reply)

/** A batch's per-item results, in item order: the stored seq, or that item's own error. */
fun batchResults(reply: JsonObject): List<BatchItemResult> {
    val results = reply["results"] as? JsonArray
    if (reply.str("op") != "ok" || results == null) throw wireError(reply)
    return results.map { r ->
        val o = r as? JsonObject ?: JsonObject(emptyMap())
        val code = o.str("error")
        if (code != null) BatchItemResult.Failed(wireError(o)) else BatchItemResult.Stored(o.long("seq") ?: 0, o.bool("duplicate"))
    }
}

/** An ack, nak, term or inprogress frame. */
internal fun settleFrame(s: Settle): JsonObject = buildJsonObject {
    put("op", s.op)
    put("seq", s.seq)
    put("sub", s.sub)
    if (s.delayMs != null) put("delay", s.delayMs)
}

/**
 * A `msg` frame as the collector gets it; [payload] is its `data` as the wire's bytes (ReceivedFrame.payload),
 * [send] puts a settle frame on the socket it came on.
 */
internal fun toMessage(f: JsonObject, subChannel: String, explicitAck: Boolean, payload: ByteArray? = null, epoch: String? = null, send: (Settle) -> Unit): GatewayMessage {
    val enc = f.str("enc")?.takeIf { it == "text" || it == "base64" || it == "binary" }
    return GatewayMessage(
        channel = f.str("channel") ?: "",
        sub = f.str("sub") ?: subChannel,
        seq = f.long("seq") ?: 0,
        ts = (f["ts"] as? JsonPrimitive)?.doubleOrNull ?: 0.0,
        data = f["data"] ?: JsonNull,
        enc = enc,
        bytes = when (enc) {
            "binary" -> payload
            "base64" -> f.str("data")?.let { runCatching { base64Bytes(it) }.getOrNull() }
            else -> null
        },
        type = f.str("type"),
        durable = f.str("durable"),
        redelivered = f.bool("redelivered"),
        deliveries = f.long("deliveries")?.toInt(),
        epoch = epoch,
        explicitAck = explicitAck,
        send = { s -> send(s.copy(sub = subChannel)) },
    )
}

/** A `join` or `leave` frame. */
fun presenceEvent(f: JsonObject): PresenceEvent = PresenceEvent(
    if (f.str("op") == "join") PresenceEvent.Type.JOIN else PresenceEvent.Type.LEAVE,
    f.str("channel") ?: "",
    f.str("client") ?: "",
    f.str("user"),
    f["info"],
)

/** The `presence` reply as a members list. */
fun presenceList(r: JsonObject): PresenceList {
    if (r.str("op") != "presence") throw wireError(r)
    val members = (r["members"] as? JsonArray).orEmpty().mapNotNull { it as? JsonObject }.map {
        PresenceMember(it.str("client") ?: "", it.str("user"), it["info"], it.long("joinedAt") ?: 0)
    }
    return PresenceList(members, r.bool("truncated"))
}

/** A history answer (`GET /v1/channels/{channel}/messages`). */
fun historyPage(body: JsonObject): HistoryPage = HistoryPage(
    (body["messages"] as? JsonArray).orEmpty().mapNotNull { it as? JsonObject }.map {
        val enc = it.str("enc")
        HistoryMessage(
            it.long("seq") ?: 0,
            (it["ts"] as? JsonPrimitive)?.doubleOrNull ?: 0.0,
            it.str("channel") ?: "",
            it["data"] ?: JsonNull,
            enc,
            it.str("type"),
            if (enc == "base64") base64Bytes(it.str("data")) else null,
        )
    },
    body.long("firstSeq"),
    body.long("lastSeq"),
    body.long("next"),
)

internal fun JsonObject.bool(key: String): Boolean = (this[key] as? JsonPrimitive)?.booleanOrNull == true

internal fun JsonObject.long(key: String): Long? {
    val p = this[key] as? JsonPrimitive ?: return null
    if (p.isString) return null
    return p.longOrNull ?: p.doubleOrNull?.toLong()
}
