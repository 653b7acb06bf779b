package dev.fanout.client

import kotlinx.coroutines.CompletableDeferred
import kotlinx.serialization.json.JsonObject

/**
 * Publishes not answered yet, in call order. On every open all of them are sent again, each with its msgId,
 * so the server stores each once whether or not the first try reached it. Only the client's thread touches it.
 */
internal class Outbox(private val limit: Int) {
    class Pub(val frame: JsonObject) {
        val reply = CompletableDeferred<JsonObject>()
    }

    private val items = LinkedHashSet<Pub>()

    val size: Int get() = items.size

    fun add(frame: JsonObject): Pub = Pub(frame).also { items.add(it) }

    fun all(): List<Pub> = items.toList()

    fun remove(pub: Pub) {
        items.remove(pub)
    }

    /** The server answered [pub]: hand the reply over and forget it. */
    fun settle(pub: Pub, reply: JsonObject) {
        items.remove(pub)
        pub.reply.complete(reply)
    }

    /** The client stopped: every publish fails with [error]. */
    fun failAll(error: GatewayException) {
        for (p in items) p.reply.completeExceptionally(error)
        items.clear()
    }
}
