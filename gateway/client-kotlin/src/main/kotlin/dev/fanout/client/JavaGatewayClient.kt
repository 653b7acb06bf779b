package dev.fanout.client

import java.util.concurrent.CompletableFuture
import java.util.function.Consumer
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.future.future
import kotlinx.coroutines.launch
import kotlinx.serialization.json.Json

/**
 * The client for Java callers: each suspending call as a `CompletableFuture` (failing with the same
 * [GatewayException]s), JSON as text, and a subscription's messages as a callback instead of a Flow. A thin
 * layer over [client], which stays usable from Kotlin; [close] closes both. On Android it needs API 24
 * (`CompletableFuture`), unlike the rest of the SDK.
 */
class JavaGatewayClient(val client: GatewayClient) : AutoCloseable {
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    fun connect(): CompletableFuture<Void?> = scope.future { client.connect(); null }

    /** Publishes [json] (any JSON text: `{"a":1}`, `"text"`, `42`). */
    fun publish(channel: String, json: String): CompletableFuture<PublishResult> = scope.future { client.publish(channel, Json.parseToJsonElement(json)) }

    fun publish(channel: String, bytes: ByteArray, type: String): CompletableFuture<PublishResult> = scope.future { client.publish(channel, bytes, type) }

    /** Calls the backend's [method] with [json]; completes with its answer's `data` as JSON text. */
    fun rpc(method: String, json: String): CompletableFuture<String> = scope.future { client.rpc(method, Json.parseToJsonElement(json)).toString() }

    /** Stored messages from [fromSeq] (null: the oldest), at most [limit] (null: the server's page size). */
    fun history(channel: String, fromSeq: Long?, limit: Int?): CompletableFuture<HistoryPage> = scope.future { client.history(channel, fromSeq = fromSeq, limit = limit) }

    /**
     * Subscribes; completes once the server said `ok`. [onMessage] gets each message in order on one thread at
     * a time (the next waits until it returns, as a Flow collector does); [onEnd] gets null when the
     * subscription ends normally (unsubscribe, close) or its error.
     */
    @JvmOverloads
    fun subscribe(
        channel: String,
        options: SubscribeOptions,
        onMessage: Consumer<GatewayMessage>,
        onEnd: Consumer<Throwable?> = Consumer {},
    ): CompletableFuture<Subscription> = scope.future {
        val sub = client.subscribe(channel, options)
        scope.launch {
            val error = try {
                sub.messages.collect { onMessage.accept(it) }
                null
            } catch (e: Exception) {
                e
            }
            onEnd.accept(error)
        }
        sub
    }

    override fun close() {
        client.close()
        scope.cancel()
    }
}
