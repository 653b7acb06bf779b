package dev.fanout.client

import java.util.UUID
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicLong
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineExceptionHandler
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.ExperimentalCoroutinesApi
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.cancel
import kotlinx.coroutines.channels.BufferOverflow
import kotlinx.coroutines.flow.MutableSharedFlow
import kotlinx.coroutines.flow.SharedFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asSharedFlow
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import okhttp3.OkHttpClient
import okhttp3.WebSocket

/**
 * A gateway connection that survives disconnects: it reconnects with full-jitter backoff, resumes every
 * subscription from the last seq it delivered (dropping duplicates), queues publishes while disconnected and
 * re-sends unanswered ones with the same msgId so the server stores them once.
 *
 * Every call may come from any thread; the client's state lives on one single-threaded dispatcher. Listeners,
 * `onPresence` and `onAutoMessage` run there too, or on [GatewayClientOptions.callbackDispatcher] when set.
 */
@OptIn(ExperimentalCoroutinesApi::class)
class GatewayClient(private val url: String, options: GatewayClientOptions = GatewayClientOptions()) {
    constructor(url: String, configure: GatewayClientOptions.() -> Unit) : this(url, GatewayClientOptions().apply(configure))

    /**
     * Counters for the curious: reconnects made, duplicate messages dropped, and deltas a delta subscription
     * could not apply (each made it subscribe again from its position).
     */
    class Stats internal constructor() {
        internal val reconnectCount = AtomicLong()
        internal val duplicateCount = AtomicLong()
        internal val deltasLostCount = AtomicLong()
        internal val overflowCount = AtomicLong()
        val reconnects: Long get() = reconnectCount.get()
        val duplicatesDropped: Long get() = duplicateCount.get()
        val deltasLost: Long get() = deltasLostCount.get()

        /** Times a subscription's buffer filled up and the subscription paused until its collector caught up. */
        val bufferOverflows: Long get() = overflowCount.get()
    }

    val stats = Stats()
    private val opts = options.also { it.check() }
    private val ownsHttp = options.okHttpClient == null
    internal val http: OkHttpClient = options.okHttpClient
        ?: OkHttpClient.Builder().connectTimeout(options.connectTimeoutMs, TimeUnit.MILLISECONDS).readTimeout(0, TimeUnit.MILLISECONDS).build()
    private val listeners = CopyOnWriteArrayList<GatewayListener>()
    private val loop = Dispatchers.Default.limitedParallelism(1)
    private val scope = CoroutineScope(
        SupervisorJob() + loop + CoroutineExceptionHandler { _, e ->
            opts.logHandler.log(LogLevel.ERROR, "fanout client: client bug: $e", e)
            emit(GatewayEvent.Error(GatewayException("internal", "client bug: $e", cause = e)))
        },
    )
    private val callbacks = Callbacks(opts.callbackDispatcher, opts.logHandler)
    private val eventFlow = MutableSharedFlow<GatewayEvent>(extraBufferCapacity = EVENT_BUFFER, onBufferOverflow = BufferOverflow.DROP_OLDEST)
    private val closing = AtomicBoolean(false)
    private val closeDone = CompletableDeferred<Unit>()
    private val subs = LinkedHashMap<String, Sub>()
    private val outbox = Outbox(opts.queueLimit)
    private val conn = Connection(url, opts, http, scope, Hooks()) { stats.reconnectCount.incrementAndGet() }

    /** True while the socket is open. */
    val isConnected: Boolean get() = conn.state == ConnectionState.OPEN
    val state: ConnectionState get() = conn.state

    /** The connection's state as it changes (`IDLE`, `CONNECTING`, `OPEN`, `WAITING`, `PAUSED`, `CLOSED`). */
    val connectionState: StateFlow<ConnectionState> get() = conn.states

    /**
     * The client's events as a flow, collected on the collector's own dispatcher (the same events listeners get).
     * A collector more than 64 events behind loses the oldest; a listener never does.
     */
    val events: SharedFlow<GatewayEvent> = eventFlow.asSharedFlow()

    /** Adds a listener of the client's events; returns the function that removes it. */
    fun addListener(listener: GatewayListener): () -> Unit {
        listeners.add(listener)
        return { listeners.remove(listener) }
    }

    /**
     * Starts connecting (and reconnecting); returns on the first successful open. Throws `timeout` (temporary)
     * when none came within [timeoutMs], saying how the last attempt ended; the client goes on trying (close() to
     * stop it). Throws the refusal's code (`unauthorized`, `forbidden`, …) when the client stopped.
     */
    suspend fun connect(timeoutMs: Long = opts.connectWaitMs) {
        val first = withContext(loop) { conn.connect() }
        withTimeoutOrNull(timeoutMs) { first.await() } ?: throw withContext(loop) {
            val last = conn.lastFailure?.let { "the last attempt ended with $it" } ?: "no attempt has ended yet"
            GatewayException("timeout", "no connection to $url within $timeoutMs ms ($last); still trying", temporary = true)
        }
    }

    /**
     * Subscribes to a channel pattern and returns once the server said `ok` (throws its `err`). The
     * subscription survives reconnects, resuming after the last delivered seq. Subscribing to the pattern of a
     * server-side subscription takes it over where it is. Waits at most `subscribeTimeoutMs` for the `ok`
     * (also while disconnected), then throws `timeout`; while paused it throws `not_connected` at once.
     */
    suspend fun subscribe(channel: String, options: SubscribeOptions = SubscribeOptions()): Subscription {
        val sub = withContext(loop) {
            conn.stopped?.let { throw it }
            if (conn.state == ConnectionState.PAUSED) throw GatewayException("not_connected", "the client is paused: resume() before subscribing to $channel", temporary = true)
            val auto = subs[channel]
            if (auto != null && !auto.auto) throw GatewayException("already_subscribed", "already subscribed to $channel", temporary = false)
            if (options.durable != null && options.from != null) throw GatewayException("bad_option", "from is not allowed with durable", temporary = false)
            if (options.durable != null && options.presence != null) throw GatewayException("bad_option", "presence is not allowed with durable", temporary = false)
            auto?.closed = true
            val pos = if (auto != null && options.durable == null) auto.pos.copy() else Position()
            val sub = Sub(channel, options, pos, auto = false, takesOver = auto != null && options.durable == null, bufferSize = opts.subscriptionBuffer)
            subs[channel] = sub
            openSocket()?.let { sendSub(sub, it) {} }
            sub
        }
        try {
            withTimeout(opts.subscribeTimeoutMs) { sub.ready.await() }
        } catch (e: TimeoutCancellationException) {
            unsubscribe(sub)
            throw GatewayException("timeout", "no answer to the subscribe to $channel within ${opts.subscribeTimeoutMs} ms (connection ${conn.state})", temporary = true)
        } catch (e: CancellationException) {
            unsubscribe(sub)
            throw e
        }
        return Subscription(sub, ::unsubscribe, ::taken)
    }

    /**
     * Publishes [data] (any JSON). Every publish carries a msgId (a random UUID when not given), so a publish
     * re-sent after a lost reply is stored once. While disconnected it waits in a bounded queue. [ttl] ("30s")
     * makes the message expire, in a namespace whose stream allows it. Throws `timeout` (temporary) when no
     * answer came within `publishTimeoutMs`, queued time included.
     */
    suspend fun publish(channel: String, data: JsonElement, msgId: String? = null, ttl: String? = null): PublishResult =
        publishResult(send(pubFrame(channel, data, msgId ?: newMsgId(), ttl)))

    /**
     * Publishes [bytes] as a binary payload (PROTOCOL.md "Binary payloads") of content type [type]: stored as
     * bytes, delivered as bytes on fanout.v1.msgpack and in base64 with the type named on fanout.v1. Sent as
     * base64 with `"enc":"base64"` on fanout.v1, as a bin on fanout.v1.msgpack; otherwise as [publish].
     */
    suspend fun publish(channel: String, bytes: ByteArray, type: String = OCTET_STREAM, msgId: String? = null, ttl: String? = null): PublishResult =
        publishResult(send(pubFrame(channel, JsonPrimitive(bytes.toBase64()), msgId ?: newMsgId(), ttl, type)))

    /**
     * Publishes many messages in one frame: the server stores them in item order and answers one result per
     * item, its seq or its own error. Queued while disconnected like [publish] (a batch counts as one). Throws
     * as a whole only when the frame is refused (too many items, too large) or the client closes.
     */
    suspend fun publishBatch(items: List<BatchItem>): List<BatchItemResult> {
        if (items.isEmpty()) return emptyList()
        return batchResults(send(batchFrame(items.map { if (it.msgId == null) it.copy(msgId = newMsgId()) else it })))
    }

    /**
     * Replaces the connection's token before it expires (`refresh` frame); later reconnects use it too.
     * Returns the new expiry (unix seconds), or null without an open connection (the next one presents it).
     * Throws the server's `err` (forbidden: invalid, or another user's).
     */
    suspend fun refreshToken(token: String): Long? {
        val reply = withContext(loop) {
            conn.token = token
            val ws = openSocket() ?: return@withContext null
            CompletableDeferred<JsonObject?>().also { d ->
                conn.request(ws, buildJsonObject { put("op", "refresh"); put("token", token) }, { d.complete(it) }, { d.complete(null) })
            }
        }?.await() ?: return null
        if (reply.str("op") != "ok") throw wireError(reply)
        return reply.long("exp")
    }

    /** The members of a channel's presence (needs the sub right on it). Throws `not_connected` without an open connection. */
    suspend fun presence(channel: String): PresenceList {
        val reply = withContext(loop) {
            val ws = openSocket() ?: throw GatewayException("not_connected", "no open connection", temporary = true)
            CompletableDeferred<JsonObject>().also { d ->
                conn.request(ws, buildJsonObject { put("op", "presence"); put("channel", channel) }, { d.complete(it) }) {
                    d.completeExceptionally(GatewayException("not_connected", "the connection closed before the answer", temporary = true))
                }
            }
        }.await()
        return presenceList(reply)
    }

    /**
     * Calls the application backend's [method] with [data] (PROTOCOL.md `rpc`; the token must grant the method)
     * and returns its answer's `data`. Throws the server's error: `rpc_error` when the backend answered with one
     * (its own code in [GatewayException.appCode], `temporary` as it said), `forbidden`, `hook_unavailable`
     * (temporary), `rpc_unavailable`. Never queued nor re-sent, since the backend may have run it: throws
     * `not_connected` while disconnected, `connection_lost` when the connection drops before the answer and
     * `timeout` past `rpcTimeoutMs`, all temporary (retry when a repeat is harmless); `closed` once the client is closed.
     */
    suspend fun rpc(method: String, data: JsonElement = JsonNull): JsonElement {
        val answer = withContext(loop) {
            conn.stopped?.let { throw it }
            val ws = openSocket() ?: throw GatewayException("not_connected", "no open connection", temporary = true)
            CompletableDeferred<JsonObject>().also { d ->
                val frame = buildJsonObject { put("op", "rpc"); put("method", method); put("data", data) }
                conn.request(ws, frame, { d.complete(it) }) {
                    d.completeExceptionally(conn.stopped ?: GatewayException("connection_lost", "connection lost before $method was answered", temporary = true))
                }
            }
        }
        val reply = withTimeoutOrNull(opts.rpcTimeoutMs) { answer.await() }
            ?: throw GatewayException("timeout", "no answer to the rpc $method within ${opts.rpcTimeoutMs} ms; the backend may have run it", temporary = true)
        if (reply.str("op") != "ok") throw wireError(reply)
        return reply["data"] ?: JsonNull
    }

    /**
     * Stored messages of a concrete channel over HTTP (`GET /v1/channels/{channel}/messages`), with the token
     * of the next connect: from [fromSeq] (at most [limit]), or the [last] N; with [reverse], at most [limit]
     * newest first, below [beforeSeq]. Follow [HistoryPage.next] (as `fromSeq`, or `beforeSeq` in reverse) for more.
     * The page is parsed on `Dispatchers.Default`, not the caller's thread; throws `timeout` (temporary) past
     * `historyTimeoutMs`.
     */
    suspend fun history(
        channel: String,
        fromSeq: Long? = null,
        last: Int? = null,
        limit: Int? = null,
        reverse: Boolean = false,
        beforeSeq: Long? = null,
    ): HistoryPage {
        return withTimeoutOrNull(opts.historyTimeoutMs) {
            val token = opts.getToken?.invoke() ?: withContext(loop) { conn.token }
            History(http, url).read(channel, token, fromSeq, last, limit, reverse, beforeSeq)
        } ?: throw GatewayException("timeout", "no history page of $channel within ${opts.historyTimeoutMs} ms", temporary = true)
    }

    /**
     * For an app going to the background: closes the socket and stops reconnecting, keeping every
     * subscription's position and the queued publishes. [resume] reconnects and resumes from them.
     */
    fun pause() {
        scope.launch { conn.pause() }
    }

    /** Back in the foreground: reconnects at once and resumes every subscription where it was. */
    fun resume() {
        scope.launch { conn.resume() }
    }

    /** For a network change: drops the socket (or the backoff wait) and connects at once. */
    fun reconnectNow() {
        scope.launch { conn.reconnectNow() }
    }

    /**
     * Closes with 1000 and stops reconnecting, from any thread without waiting (`onCleared`, `onDestroy`):
     * queued publishes and pending subscribes fail with `closed`, every subscription's Flow completes normally.
     * [closeAndJoin] waits until the socket is closed.
     */
    fun close() {
        if (!closing.compareAndSet(false, true)) return
        scope.launch(NonCancellable) {
            try {
                conn.close(GatewayException("closed", "client closed", temporary = false))
            } finally {
                callbacks.close()
                closeDone.complete(Unit)
                scope.cancel()
                if (ownsHttp) {
                    http.dispatcher.executorService.shutdown()
                    http.connectionPool.evictAll()
                }
            }
        }
    }

    /** [close], then waits until the socket is closed (at most about 3 s for the server's close frame). */
    suspend fun closeAndJoin() {
        close()
        closeDone.await()
    }

    private fun emit(e: GatewayEvent) {
        eventFlow.tryEmit(e)
        if (listeners.isEmpty()) return
        callbacks.post {
            for (l in listeners) {
                try {
                    l.onEvent(e)
                } catch (err: Exception) {
                    callbacks.warn("fanout client: a listener threw on $e: $err", err)
                }
            }
        }
    }

    private fun openSocket(): WebSocket? = if (conn.state == ConnectionState.OPEN) conn.ws else null

    private suspend fun send(frame: JsonObject): JsonObject {
        val pub = withContext(loop) {
            conn.stopped?.let { throw it }
            val ws = openSocket()
            if (ws == null && outbox.size >= opts.queueLimit) {
                throw GatewayException("queue_full", "publish queue is full (${opts.queueLimit} waiting while disconnected)", temporary = true)
            }
            outbox.add(frame).also { p -> ws?.let { sendPub(p, it) } }
        }
        try {
            return withTimeout(opts.publishTimeoutMs) { pub.reply.await() }
        } catch (e: CancellationException) {
            val state = withContext(NonCancellable + loop) { outbox.remove(pub); conn.state }
            if (e !is TimeoutCancellationException) throw e
            val what = frame.str("channel")?.let { "the publish to $it (msgId ${frame.str("msgId")})" } ?: "the batch"
            throw GatewayException("timeout", "no answer to $what within ${opts.publishTimeoutMs} ms (connection $state); it may still be stored: publish it again with the same msgId", temporary = true)
        }
    }

    private fun sendPub(pub: Outbox.Pub, ws: WebSocket) {
        conn.request(ws, pub.frame, { reply -> outbox.settle(pub, reply) })
    }

    /**
     * (Re)subscribes [sub]: with [GatewayClientOptions.getSubscriptionToken], first asks it for a token (a
     * server-side subscription needs none). A token that cannot be had counts as a failed resubscribe.
     */
    private fun sendSub(sub: Sub, ws: WebSocket, onDone: () -> Unit) {
        sub.tokenRefresh?.cancel()
        val get = opts.getSubscriptionToken
        if (get == null || sub.auto) return sendSubFrame(sub, ws, onDone, null)
        scope.launch {
            val token = try {
                get(sub.channel)
            } catch (e: CancellationException) {
                throw e
            } catch (e: Exception) {
                emit(GatewayEvent.Error(GatewayException("token_error", "getSubscriptionToken(${sub.channel}) failed: $e", temporary = true, cause = e), sub.channel))
                if (conn.ws === ws) ws.close(CLOSE_CLIENT_RETRY, "getSubscriptionToken failed")
                return@launch onDone()
            }
            if (conn.ws !== ws || sub.closed) onDone() else sendSubFrame(sub, ws, onDone, token)
        }
    }

    /** Refreshes [sub]'s token (`sub_refresh`) before [exp]; a failure is reported and the server ends it at exp. */
    private fun scheduleSubRefresh(sub: Sub, ws: WebSocket, exp: Long?) {
        sub.tokenRefresh?.cancel()
        val get = opts.getSubscriptionToken ?: return
        if (exp == null) return
        sub.tokenRefresh = scope.launch {
            delay(((exp * 1000 - System.currentTimeMillis()) * SUB_TOKEN_REFRESH_AT).toLong().coerceAtLeast(0))
            val token = try {
                get(sub.channel)
            } catch (e: CancellationException) {
                throw e
            } catch (e: Exception) {
                return@launch emit(GatewayEvent.Error(GatewayException("token_error", "getSubscriptionToken(${sub.channel}) failed: $e", temporary = true, cause = e), sub.channel))
            } ?: return@launch
            if (sub.closed || conn.ws !== ws || conn.state != ConnectionState.OPEN) return@launch
            val frame = buildJsonObject { put("op", "sub_refresh"); put("channel", sub.channel); put("token", token) }
            conn.request(ws, frame, onReply = { r ->
                if (r.str("op") != "ok") emit(GatewayEvent.Error(wireError(r), sub.channel)) else scheduleSubRefresh(sub, ws, r.long("exp") ?: tokenExp(token))
            })
        }
    }

    private fun sendSubFrame(sub: Sub, ws: WebSocket, onDone: () -> Unit, token: String?) {
        val (plain, expectedSeq) = subscribeFrame(sub.channel, sub.opts, sub.pos, sub.auto || sub.takesOver)
        val frame = if (token == null) plain else JsonObject(plain + ("token" to JsonPrimitive(token)))
        // The server starts each channel of a new subscription with a full message.
        sub.deltas?.reset()
        sub.resuming = sub.opts.durable == null
        conn.request(ws, frame, onLost = { sub.resuming = false }, onReply = { reply ->
            sub.resuming = false
            if (sub.closed) return@request onDone()
            if (reply.str("op") == "ok") {
                if (token != null) scheduleSubRefresh(sub, ws, tokenExp(token))
                val (info, gap) = acceptOk(sub.channel, sub.pos, reply, expectedSeq)
                if (info.client != null) sub.client = info.client
                gap?.let(::emit)
                sub.ready.complete(info)
                return@request onDone()
            }
            val error = wireError(reply)
            emit(GatewayEvent.Error(error, sub.channel))
            // presence_full is temporary (members leave) but reconnecting would not make room: the subscription ends.
            if (error.temporary && error.code != "presence_full") {
                ws.close(CLOSE_CLIENT_RETRY, "resubscribe failed: ${error.code}")
                return@request
            }
            end(sub, error) // a permanent refusal (bad_channel, forbidden…)
            onDone()
        })
    }

    private fun unsubscribe(sub: Sub) {
        scope.launch {
            if (sub.closed) return@launch
            end(sub, GatewayException("unsubscribed", "unsubscribed from ${sub.channel}", temporary = false), graceful = true)
            openSocket()?.let { conn.request(it, buildJsonObject { put("op", "unsub"); put("channel", sub.channel) }, {}) }
        }
    }

    /** The subscription is over: forgotten (a reconnect does not renew it), its Flow ends (with [error] unless [graceful]). */
    private fun end(sub: Sub, error: GatewayException, graceful: Boolean = false) {
        sub.closed = true
        sub.tokenRefresh?.cancel()
        if (subs[sub.channel] === sub) subs.remove(sub.channel)
        sub.ready.completeExceptionally(error)
        sub.inbox.close(if (graceful) null else error)
    }

    private inner class Hooks : ConnectionHooks {
        override fun emit(e: GatewayEvent) = this@GatewayClient.emit(e)

        override fun opened(ws: WebSocket) {
            // A server-side subscription without an epoch (a broker that stores nothing) cannot resume: the
            // server subscribes the new connection again by itself.
            subs.values.removeAll { it.auto && it.pos.epoch == null }
            // One whose collector fell a buffer behind is made again once that collector catches up (taken()).
            val all = subs.values.filter { !it.overflowed }
            var outstanding = all.size
            val done = {
                if (conn.ws === ws) {
                    conn.resetBackoff()
                    emit(GatewayEvent.Resubscribed(all.size))
                }
            }
            for (sub in all) sendSub(sub, ws) { if (--outstanding == 0) done() }
            if (all.isEmpty()) done()
            for (pub in outbox.all()) sendPub(pub, ws)
        }

        /** Frames that are not replies: messages, server-side subscriptions, presence changes, a subscription the server ended. */
        override fun frame(ws: WebSocket, received: ReceivedFrame): Boolean {
            val f = received.fields
            when (f.str("op")) {
                "msg" -> onMsg(ws, f, received)
                "sub" -> if (f.bool("auto")) onAutoSub(f) else return false
                "join", "leave" -> onPresence(f)
                "unsub" -> onServerUnsub(f)
                else -> return false
            }
            return true
        }

        override fun stopped(error: GatewayException) {
            outbox.failAll(error)
            // The app's close() ends each Flow normally (no exception in a lifecycleScope); a refusal or a 4403 fails it.
            val flowError = if (error.code == "closed") null else error
            for (sub in subs.values) {
                sub.ready.completeExceptionally(error)
                sub.inbox.close(flowError)
            }
        }
    }

    private fun onMsg(ws: WebSocket, frame: JsonObject, received: ReceivedFrame) {
        val sub = subs[frame.str("sub")] ?: return
        if (sub.closed || sub.resuming || sub.overflowed) return
        val seq = frame.long("seq") ?: return
        if (!sub.auto && sub.buffered.get() >= sub.limit) return overflow(sub, ws, frame, received)
        // Before the seq is recorded: a message whose delta cannot be applied is read again after the resubscribe.
        val f = if (sub.deltas == null) frame else applyDelta(sub, ws, frame, received) ?: return
        if (sub.opts.durable == null && !sub.pos.accept(f.str("channel") ?: "", seq)) {
            stats.duplicateCount.incrementAndGet()
            return
        }
        val msg = toMessage(f, sub.channel, sub.opts.ack, received.payload, sub.pos.epoch) { s ->
            // Acks on a closed socket are moot: the server released its unacked messages for redelivery.
            if (conn.ws === ws && conn.state == ConnectionState.OPEN) conn.send(ws, settleFrame(s))
        }
        if (!sub.auto) {
            sub.buffered.incrementAndGet()
            sub.inbox.trySend(msg)
            return
        }
        val fn = opts.onAutoMessage ?: return
        callbacks.post {
            try {
                fn(msg)
            } catch (e: Exception) {
                emit(GatewayEvent.Error(GatewayException("handler_error", "onAutoMessage threw on seq $seq: $e", cause = e), sub.channel))
            }
        }
    }

    /**
     * A message for a subscription whose collector is a whole buffer behind. Nothing is dropped: a durable with
     * acks naks it (the server sends it again later); any other stops its server subscription, and [taken]
     * makes it again from the last message held (the seq of this one is not recorded) once half is taken.
     */
    private fun overflow(sub: Sub, ws: WebSocket, frame: JsonObject, received: ReceivedFrame) {
        if (sub.opts.durable != null) {
            toMessage(frame, sub.channel, explicitAck = true, received.payload) { s -> conn.send(ws, settleFrame(s)) }.nak()
            return
        }
        sub.overflowed = true
        stats.overflowCount.incrementAndGet()
        opts.logHandler.log(LogLevel.DEBUG, "fanout client: ${sub.channel}: ${sub.limit} messages wait for the collector; paused until it takes half", null)
        conn.request(ws, buildJsonObject { put("op", "unsub"); put("channel", sub.channel) }, {})
        // The collector may have taken half the buffer (or all of it) between the check in onMsg and the flag
        // above, each take finding the flag unset: nothing would call taken() again, and the subscription would
        // stay paused with an empty buffer. Checked once more here, after the unsub, so a resubscribe follows it.
        taken(sub)
    }

    /** The collector took a message: a subscription paused by [overflow] starts again once half the buffer is free. */
    private fun taken(sub: Sub) {
        if (!sub.overflowed || sub.buffered.get() > sub.limit / 2) return
        scope.launch {
            if (!sub.overflowed || sub.closed) return@launch
            sub.overflowed = false
            openSocket()?.let { sendSub(sub, it) {} } // else the next open makes it
        }
    }

    /**
     * A delta subscription's message made whole (its `data`); null when it cannot be (no base for the delta, or
     * a delta that does not apply): nothing of it is shown, and the subscription is made again from its position
     * (unsub, then sub from lastSeq + 1), the server starting each channel with a full message.
     */
    private fun applyDelta(sub: Sub, ws: WebSocket, f: JsonObject, received: ReceivedFrame): JsonObject? {
        val got = try {
            sub.deltas!!.receive(f, received.text, received.payload)
        } catch (e: IllegalArgumentException) {
            DeltaOutcome.Resubscribe("bad_delta")
        }
        if (got is DeltaOutcome.Message) return JsonObject(f + ("data" to got.data) - "delta" - "base")
        stats.deltasLostCount.incrementAndGet()
        sub.resuming = true
        conn.request(ws, buildJsonObject { put("op", "unsub"); put("channel", sub.channel) }, {})
        sendSub(sub, ws) {}
        return null
    }

    /** The server subscribed this connection to a channel (`channels.auto`): tracked like a subscribe(). */
    private fun onAutoSub(f: JsonObject) {
        val channel = f.str("channel") ?: return
        if (subs.containsKey(channel)) return // this connection's resubscribe takes the server's one over (or did)
        val seq = f.long("seq") ?: 0
        val sub = Sub(channel, SubscribeOptions(), Position().apply { startAt(seq, f.str("epoch")) }, auto = true)
        sub.ready.complete(SubscribeInfo(lastSeq = seq, epoch = f.str("epoch")))
        subs[channel] = sub
        emit(GatewayEvent.AutoSubscribed(channel, seq))
    }

    /**
     * The server ended a subscription: an operator's unsubscribe (forget it, so a reconnect does not renew it),
     * or its subscription token expired unrefreshed (`subscription_expired`: subscribe again with a new one).
     */
    private fun onServerUnsub(f: JsonObject) {
        val channel = f.str("channel") ?: return
        val sub = subs[channel]?.takeIf { !it.closed } ?: return
        if (f.str("code") == "subscription_expired" && opts.getSubscriptionToken != null) return openSocket()?.let { sendSub(sub, it) {} } ?: Unit
        val error = GatewayException("unsubscribed", "the server ended the subscription to $channel: ${f.str("reason") ?: ""}", temporary = false)
        end(sub, error)
        emit(GatewayEvent.Error(error, channel))
    }

    private fun onPresence(f: JsonObject) {
        val sub = subs[f.str("channel")]?.takeIf { !it.closed } ?: return
        val fn = sub.opts.onPresence ?: return
        val e = presenceEvent(f)
        callbacks.post {
            try {
                fn(e)
            } catch (err: Exception) {
                emit(GatewayEvent.Error(GatewayException("handler_error", "onPresence for ${e.channel} threw: $err", cause = err), e.channel))
            }
        }
    }

    private companion object {
        /** Events a slow collector of [events] may fall behind before it loses the oldest. */
        const val EVENT_BUFFER = 64

        fun newMsgId(): String = UUID.randomUUID().toString()
    }
}

