package dev.fanout.client

import java.io.File
import java.time.Instant
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.boolean
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.contentOrNull
import kotlinx.serialization.json.double
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonArray
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.long
import kotlinx.serialization.json.longOrNull
import kotlinx.serialization.json.put
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.TestFactory

/** The shared vectors (gateway/conformance/vectors/frames.json), which the TypeScript SDK's tests read too. */
class VectorsTest {
    private val vectors = Json.parseToJsonElement(File("../conformance/vectors/frames.json").readText()).jsonObject

    private fun cases(kind: String, check: (JsonObject) -> Unit): List<DynamicTest> =
        vectors.getValue(kind).jsonArray.map { it.jsonObject }.map { v ->
            DynamicTest.dynamicTest("vectors — $kind: ${v.s("name")}") { check(v) }
        }

    @TestFactory
    fun backoff() = cases("backoff") { v ->
        val random = v.getValue("random").jsonPrimitive.double
        assertEquals(v.getValue("delay").jsonPrimitive.long, backoffDelay(v.getValue("attempt").jsonPrimitive.int, v.getValue("minMs").jsonPrimitive.long, v.getValue("maxMs").jsonPrimitive.long) { random })
    }

    @TestFactory
    fun subscribe() = cases("subscribe") { v ->
        val (frame, expectedSeq) = subscribeFrame(v.s("channel")!!, options(v.getValue("options").jsonObject), position(v.getValue("position").jsonObject), v.getValue("resumes").jsonPrimitive.boolean)
        assertEquals(v["frame"], frame)
        assertEquals(v.getValue("expectedSeq").jsonPrimitive.longOrNull, expectedSeq)
    }

    @TestFactory
    fun acceptOk() = cases("acceptOk") { v ->
        val pos = position(v.getValue("position").jsonObject)
        val (info, gap) = acceptOk(v.s("channel")!!, pos, v.getValue("reply").jsonObject, v.getValue("expectedSeq").jsonPrimitive.longOrNull)
        assertEquals(v["info"], infoJson(info))
        assertEquals(v["gap"], gap?.let(::gapJson) ?: JsonNull)
        assertEquals(v["after"], buildJsonObject { put("lastSeq", pos.lastSeq); pos.epoch?.let { put("epoch", it) } })
    }

    @TestFactory
    fun dedup() = cases("dedup") { v ->
        val pos = Position(v.getValue("maxChannels").jsonPrimitive.int)
        for (d in v.getValue("deliveries").jsonArray.map { it.jsonArray }) {
            assertEquals(d[2].jsonPrimitive.boolean, pos.accept(d[0].jsonPrimitive.content, d[1].jsonPrimitive.long), "delivery $d")
        }
        assertEquals(v.getValue("lastSeq").jsonPrimitive.long, pos.lastSeq)
    }

    @TestFactory
    fun publish() = cases("publish") { v ->
        assertEquals(v["frame"], pubFrame(v.s("channel")!!, v.getValue("data"), v.s("msgId")!!, v.s("ttl")))
    }

    @TestFactory
    fun batch() = cases("batch") { v ->
        val items = v.getValue("items").jsonArray.map { it.jsonObject }.map { BatchItem(it.s("channel")!!, it.getValue("data"), it.s("msgId"), it.s("ttl")) }
        assertEquals(v["frame"], batchFrame(items))
    }

    @TestFactory
    fun batchResults() = cases("batchResults") { v ->
        val got = batchResults(v.getValue("reply").jsonObject).map { r ->
            when (r) {
                is BatchItemResult.Stored -> buildJsonObject { put("seq", r.seq); put("duplicate", r.duplicate) }
                is BatchItemResult.Failed -> buildJsonObject { put("error", buildJsonObject { put("code", r.error.code); put("temporary", r.error.temporary) }) }
            }
        }
        assertEquals(v["results"], JsonArray(got))
    }

    @TestFactory
    fun message() = cases("message") { v ->
        val m = toMessage(v.getValue("frame").jsonObject, "unused", explicitAck = false) {}
        val got = buildJsonObject {
            put("channel", m.channel)
            put("sub", m.sub)
            put("seq", m.seq)
            put("ts", m.ts)
            put("data", m.data)
            m.enc?.let { put("enc", it) }
            m.durable?.let { put("durable", it) }
            if (m.redelivered) put("redelivered", true)
            m.deliveries?.let { put("deliveries", it) }
        }
        val want = v.getValue("message").jsonObject
        assertEquals(want.keys, got.keys)
        for (k in want.keys) assertEquals(normal(want.getValue(k)), normal(got.getValue(k)), k)
    }

    @TestFactory
    fun settle() = cases("settle") { v ->
        val sent = mutableListOf<JsonElement>()
        val frame = buildJsonObject { put("op", "msg"); put("channel", "x"); put("sub", v.s("subChannel")!!); put("seq", v.getValue("seq").jsonPrimitive.long); put("data", 1) }
        val m = toMessage(frame, v.s("subChannel")!!, v.getValue("explicitAck").jsonPrimitive.boolean) { sent.add(settleFrame(it)) }
        for (call in v.getValue("calls").jsonArray.map { it.jsonArray }) {
            when (call[0].jsonPrimitive.content) {
                "ack" -> m.ack()
                "nak" -> m.nak(call.getOrNull(1)?.jsonPrimitive?.long)
                "term" -> m.term()
                "inProgress" -> m.inProgress()
            }
        }
        assertEquals(v["sent"], JsonArray(sent))
    }

    @TestFactory
    fun presence() = cases("presence") { v ->
        val e = presenceEvent(v.getValue("frame").jsonObject)
        val got = buildJsonObject {
            put("type", e.type.name.lowercase())
            put("channel", e.channel)
            put("client", e.client)
            put("user", e.user)
            e.info?.let { put("info", it) }
        }
        assertEquals(v["event"], got)
    }

    @TestFactory
    fun errors() = cases("errors") { v ->
        val e = wireError(v.getValue("frame").jsonObject)
        assertEquals(v.s("code"), e.code)
        assertEquals(v.getValue("temporary").jsonPrimitive.boolean, e.temporary)
        assertEquals(v.s("appCode"), e.appCode)
    }

    private fun options(o: JsonObject) = SubscribeOptions(
        from = o["from"]?.let(::startOf),
        durable = o.s("durable"),
        ack = (o["ack"] as? JsonPrimitive)?.booleanOrNull == true,
        maxInflight = (o["maxInflight"] as? JsonPrimitive)?.int,
        presence = when (val p = o["presence"] as? JsonPrimitive) {
            null -> null
            else -> if (p.booleanOrNull == true) Presence.MEMBER_AND_WATCH else if (p.contentOrNull == "member") Presence.MEMBER else Presence.WATCH
        },
        info = o["info"],
    )

    private fun startOf(e: JsonElement): StartPosition = when {
        e is JsonPrimitive && e.content == "all" -> StartPosition.All
        e is JsonPrimitive && e.content == "last_per_subject" -> StartPosition.LastPerSubject
        e is JsonObject && "seq" in e -> StartPosition.Seq(e.getValue("seq").jsonPrimitive.long, e.s("epoch"))
        e is JsonObject && "last" in e -> StartPosition.Last(e.getValue("last").jsonPrimitive.int)
        e is JsonObject && "time" in e -> StartPosition.Time(Instant.parse(e.s("time")).toEpochMilli())
        else -> error("unknown start $e")
    }

    private fun position(o: JsonObject) = Position().apply { startAt(o.getValue("lastSeq").jsonPrimitive.long, o.s("epoch")) }

    private fun infoJson(i: SubscribeInfo) = buildJsonObject {
        i.epoch?.let { put("epoch", it) }
        i.firstSeq?.let { put("firstSeq", it) }
        i.lastSeq?.let { put("lastSeq", it) }
        if (i.truncated) put("truncated", true)
        if (i.epochChanged) put("epochChanged", true)
        i.client?.let { put("client", it) }
    }

    private fun gapJson(g: GatewayEvent.Gap) = buildJsonObject {
        put("channel", g.channel)
        put("expectedSeq", g.expectedSeq)
        put("firstSeq", g.firstSeq)
        if (g.epochChanged) put("epochChanged", true)
    }

    /** Numbers compared by value (1763750000000 and 1.76375E12 are one ts). */
    private fun normal(e: JsonElement): Any? = (e as? JsonPrimitive)?.takeIf { !it.isString }?.contentOrNull?.toBigDecimalOrNull()?.stripTrailingZeros() ?: e

    private fun JsonObject.s(k: String): String? = (this[k] as? JsonPrimitive)?.takeIf { it.isString }?.contentOrNull
}
