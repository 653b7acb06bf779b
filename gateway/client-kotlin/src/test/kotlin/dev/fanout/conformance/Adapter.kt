// The Kotlin SDK as a client-under-test of the conformance suite (gateway/conformance/README.md): reads
// commands as JSON lines on stdin, answers each (same id) and reports the client's events and messages as JSON
// lines on stdout, which carries nothing else. Started by gateway/client-kotlin/conformance-adapter.sh;
// with `--msgpack` the SDK speaks fanout.v1.msgpack (binary MessagePack frames).
package dev.fanout.conformance

import dev.fanout.client.BatchItem
import dev.fanout.client.BatchItemResult
import dev.fanout.client.GatewayClient
import dev.fanout.client.GatewayEvent
import dev.fanout.client.GatewayException
import dev.fanout.client.GatewayMessage
import dev.fanout.client.Presence
import dev.fanout.client.PublishResult
import dev.fanout.client.StartPosition
import dev.fanout.client.SubscribeOptions
import dev.fanout.client.Subscription
import dev.fanout.client.Wire
import java.time.Instant
import java.util.Base64
import java.util.concurrent.ConcurrentHashMap
import kotlin.system.exitProcess
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.contentOrNull
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.longOrNull
import kotlinx.serialization.json.put

private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
private val stdout = System.out
private var wire = Wire.JSON

/**
 * What one scenario made: its client, subscriptions and the coroutines that report them. `reset` replaces it
 * and closes the old one; a line of an old session is dropped, never written.
 */
private class Session {
    val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    @Volatile var client: GatewayClient? = null
    @Volatile var latestToken: String? = null
    /** Subscription tokens by channel (`setSubToken`), handed out by getSubscriptionToken when the connect asked for `subTokens`. */
    val subTokens = ConcurrentHashMap<String, String>()
    val subs = ConcurrentHashMap<String, Subscription>()

    /** Writes an event while this session is the current one (checked under the lock every line takes). */
    fun out(o: JsonObject) = synchronized(stdout) { if (session === this) write(o) }

    suspend fun close() {
        client?.closeAndJoin()
        scope.coroutineContext[Job]!!.cancelAndJoin()
    }
}

@Volatile private var session = Session()
private val client get() = session.client
private val subs get() = session.subs

private fun out(o: JsonObject) = synchronized(stdout) { write(o) }

private fun write(o: JsonObject) {
    stdout.println(o.toString())
    stdout.flush()
}

fun main(args: Array<String>) {
    if ("--msgpack" in args) wire = Wire.MSGPACK
    // Nothing but protocol lines on stdout: whatever else prints goes to stderr.
    System.setOut(System.err)
    // This adapter plays many scenarios in one process: it answers `reset` (gateway/conformance/README.md "Reuse").
    out(buildJsonObject { put("event", "adapter"); put("reset", true) })
    generateSequence(::readLine).forEach { line ->
        val c = Json.parseToJsonElement(line).jsonObject
        val id = c["id"] ?: JsonNull
        scope.launch {
            val answer = try {
                buildJsonObject {
                    put("id", id)
                    put("ok", true)
                    put("result", run(c))
                }
            } catch (e: Throwable) {
                buildJsonObject {
                    put("id", id)
                    put("ok", false)
                    put("error", errorOf(e))
                }
            }
            out(answer)
            if (c.s("cmd") == "close") exitProcess(0)
        }
    }
    runBlocking { client?.closeAndJoin() }
    exitProcess(0)
}

private suspend fun run(c: JsonObject): JsonObject = when (val cmd = c.s("cmd")) {
    "connect" -> connect(c)
    "subscribe" -> subscribe(c)
    "unsubscribe" -> empty().also { subs.remove(c.s("sub"))?.unsubscribe() }
    "publish" -> publish(c).let {
        buildJsonObject {
            put("seq", it.seq)
            put("duplicate", it.duplicate)
        }
    }
    "publishBatch" -> publishBatch(c)
    "rpc" -> buildJsonObject { put("data", client().rpc(c.s("method")!!, c["data"] ?: JsonNull)) }
    "refreshToken" -> buildJsonObject { client().refreshToken(c.s("token")!!)?.let { put("exp", it) } }
    "setToken" -> empty().also { session.latestToken = c.s("token") }
    "setSubToken" -> empty().also { session.subTokens[c.s("channel")!!] = c.s("token")!! }
    "presence" -> client().presence(c.s("channel")!!).let { p ->
        buildJsonObject {
            put("members", buildJsonArray { p.members.forEach { m -> add(buildJsonObject { put("client", m.client); put("user", m.user); m.info?.let { put("info", it) }; put("joinedAt", m.joinedAt) }) } })
            put("truncated", p.truncated)
        }
    }
    "history" -> client().history(c.s("channel")!!, c.l("fromSeq"), c.l("last")?.toInt(), c.l("limit")?.toInt(), c.b("reverse"), c.l("beforeSeq")).let { h ->
        buildJsonObject {
            put("messages", buildJsonArray { h.messages.forEach { m -> add(buildJsonObject { put("seq", m.seq); put("channel", m.channel); put("data", m.data) }) } })
            h.firstSeq?.let { put("firstSeq", it) }
            h.lastSeq?.let { put("lastSeq", it) }
            h.next?.let { put("next", it) }
        }
    }
    "pause" -> empty().also { client().pause() }
    "resume" -> empty().also { client().resume() }
    "reconnectNow" -> empty().also { client().reconnectNow() }
    "reset" -> empty().also {
        val old = session
        session = Session()
        old.close()
    }
    "close" -> empty().also { client?.closeAndJoin() }
    else -> throw GatewayException("unknown_command", "unknown command $cmd", temporary = false)
}

private fun client() = client ?: throw GatewayException("not_connected", "connect first", temporary = false)

private suspend fun connect(c: JsonObject): JsonObject {
    val s = session
    s.latestToken = c.s("token")
    val o = c["options"] as? JsonObject ?: JsonObject(emptyMap())
    val cl = GatewayClient(c.s("url")!!) {
        wire = dev.fanout.conformance.wire
        if (c.b("getToken")) getToken = { s.latestToken ?: "" } else this.token = c.s("token")
        if (c.b("subTokens")) getSubscriptionToken = { ch -> s.subTokens[ch] }
        o.l("minDelayMs")?.let { minDelayMs = it }
        o.l("maxDelayMs")?.let { maxDelayMs = it }
        o.l("pingIntervalMs")?.let { pingIntervalMs = it }
        o.l("pingTimeoutMs")?.let { pingTimeoutMs = it }
        o.l("connectTimeoutMs")?.let { connectTimeoutMs = it }
        onAutoMessage = { m -> report(s, "auto", m) }
    }
    cl.addListener { e -> s.out(eventLine(e)) }
    s.client = cl
    cl.connect()
    return empty()
}

private fun eventLine(e: GatewayEvent): JsonObject = buildJsonObject {
    when (e) {
        is GatewayEvent.Connecting -> { put("event", "connecting"); put("attempt", e.attempt) }
        GatewayEvent.Connected -> put("event", "connected")
        is GatewayEvent.Disconnected -> {
            put("event", "disconnected")
            put("code", e.code)
            put("reason", e.reason)
            put("willReconnect", e.willReconnect)
            e.reconnectInMs?.let { put("reconnectInMs", it) }
        }
        is GatewayEvent.Resubscribed -> { put("event", "resubscribed"); put("subscriptions", e.subscriptions) }
        is GatewayEvent.AutoSubscribed -> { put("event", "autoSubscribed"); put("channel", e.channel); put("seq", e.seq) }
        is GatewayEvent.Gap -> {
            put("event", "gap")
            put("channel", e.channel)
            put("expectedSeq", e.expectedSeq)
            put("firstSeq", e.firstSeq)
            if (e.epochChanged) put("epochChanged", true)
        }
        GatewayEvent.TokenExpired -> put("event", "tokenExpired")
        is GatewayEvent.Error -> {
            put("event", "error")
            put("code", e.error.code)
            put("temporary", e.error.temporary)
            e.channel?.let { put("channel", it) }
        }
    }
}

private suspend fun subscribe(c: JsonObject): JsonObject {
    val s = session
    val name = c.s("sub")!!
    val nakFirst = c.s("onMessage") == "nakFirst"
    val durable = c.s("durable")
    val presence = when (val p = c["presence"]) {
        is JsonPrimitive -> when {
            p.booleanOrNull == true -> Presence.MEMBER_AND_WATCH
            p.contentOrNull == "member" -> Presence.MEMBER
            p.contentOrNull == "watch" -> Presence.WATCH
            else -> null
        }
        else -> null
    }
    val options = SubscribeOptions(
        from = c["from"]?.let(::startOf),
        durable = durable,
        ack = durable != null && c.b("ack"),
        autoAck = if (nakFirst) false else null,
        presence = presence,
        info = c["info"],
        delta = c.s("delta"),
        onPresence = { e ->
            s.out(
                buildJsonObject {
                    put("event", "presence")
                    put("sub", name)
                    put("action", e.type.name.lowercase())
                    put("channel", e.channel)
                    put("client", e.client)
                    put("user", e.user)
                    e.info?.let { put("info", it) }
                },
            )
        },
    )
    val sub = client().subscribe(c.s("channel")!!, options)
    s.subs[name] = sub
    s.scope.launch {
        sub.messages.collect { m ->
            // Settle first, then report: a reported message's ack or nak is already on the wire.
            if (nakFirst) if (m.redelivered) m.ack() else m.nak()
            report(s, name, m)
        }
    }
    return buildJsonObject {
        sub.info.epoch?.let { put("epoch", it) }
        sub.info.firstSeq?.let { put("firstSeq", it) }
        sub.info.lastSeq?.let { put("lastSeq", it) }
        if (sub.info.truncated) put("truncated", true)
        if (sub.info.epochChanged) put("epochChanged", true)
        sub.info.client?.let { put("client", it) }
    }
}

/** `bytes` (base64) with an optional `type` publishes a binary payload (the SDK's default type without one), `data` JSON. */
private suspend fun publish(c: JsonObject): PublishResult {
    val channel = c.s("channel")!!
    val bytes = c.bytes() ?: return client().publish(channel, c["data"] ?: JsonNull, c.s("msgId"))
    val type = c.s("type")
    return if (type != null) client().publish(channel, bytes, type, c.s("msgId")) else client().publish(channel, bytes, msgId = c.s("msgId"))
}

private fun batchItem(o: JsonObject): BatchItem {
    val channel = o.s("channel")!!
    val bytes = o.bytes() ?: return BatchItem(channel, o["data"] ?: JsonNull, o.s("msgId"))
    val type = o.s("type")
    return if (type != null) BatchItem(channel, bytes, type, o.s("msgId")) else BatchItem(channel, bytes, msgId = o.s("msgId"))
}

private suspend fun publishBatch(c: JsonObject): JsonObject {
    val items = (c["items"] as? JsonArray).orEmpty().map { batchItem(it.jsonObject) }
    val results = client().publishBatch(items)
    return buildJsonObject {
        put(
            "results",
            buildJsonArray {
                for (r in results) add(
                    when (r) {
                        is BatchItemResult.Stored -> buildJsonObject { put("seq", r.seq); put("duplicate", r.duplicate) }
                        is BatchItemResult.Failed -> buildJsonObject { put("error", errorOf(r.error)) }
                    },
                )
            },
        )
    }
}

private fun startOf(e: JsonElement): StartPosition? = when {
    e is JsonPrimitive && e.contentOrNull == "all" -> StartPosition.All
    e is JsonPrimitive && e.contentOrNull == "last_per_subject" -> StartPosition.LastPerSubject
    e is JsonObject && e.l("seq") != null -> StartPosition.Seq(e.l("seq")!!, e.s("epoch"))
    e is JsonObject && e.l("last") != null -> StartPosition.Last(e.l("last")!!.toInt())
    e is JsonObject && e.s("time") != null -> StartPosition.Time(Instant.parse(e.s("time")).toEpochMilli())
    else -> null
}

private fun report(s: Session, sub: String, m: GatewayMessage) = s.out(
    buildJsonObject {
        put("event", "message")
        put("sub", sub)
        put("channel", m.channel)
        put("seq", m.seq)
        // A binary payload (PROTOCOL.md "Binary payloads") is reported as its bytes in base64 and its type.
        val bytes = m.bytes
        if (bytes == null) {
            put("data", m.data)
        } else {
            put("bytes", Base64.getEncoder().encodeToString(bytes))
            m.type?.let { put("type", it) }
        }
        if (m.redelivered) put("redelivered", true)
    },
)

private fun errorOf(e: Throwable): JsonObject = buildJsonObject {
    val g = e as? GatewayException
    put("code", g?.code ?: "internal")
    put("temporary", g?.temporary ?: true)
    put("message", e.message ?: e.toString())
    g?.appCode?.let { put("appCode", it) }
}

private fun empty() = JsonObject(emptyMap())

private fun JsonObject.s(k: String): String? = (this[k] as? JsonPrimitive)?.takeIf { it.isString }?.contentOrNull

private fun JsonObject.l(k: String): Long? = (this[k] as? JsonPrimitive)?.takeIf { !it.isString }?.longOrNull

private fun JsonObject.bytes(): ByteArray? = s("bytes")?.let { Base64.getDecoder().decode(it) }

private fun JsonObject.b(k: String): Boolean = (this[k] as? JsonPrimitive)?.booleanOrNull == true

