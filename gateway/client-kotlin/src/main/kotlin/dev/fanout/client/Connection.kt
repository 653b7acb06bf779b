package dev.fanout.client

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.launch
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.longOrNull
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import okio.ByteString

/** Close code the client uses to drop a connection it gives up on (a failed resubscribe); 4000–4999 is application use. */
internal const val CLOSE_CLIENT_RETRY = 4000

/** Close code of RFC 6455 the client closes with when the server sent what is not a frame of the wire. */
internal const val CLOSE_PROTOCOL_ERROR = 1002

/** Most bytes of an HTTP refusal's body the client reads (the gateway's `{"error",…}` is far smaller). */
private const val MAX_REFUSAL_BODY = 16_384L

/**
 * What the gateway's HTTP answer [status] to the upgrade, with [body], means: its `{"error", "message",
 * "temporary"}` (PROTOCOL.md "Error codes") when the body is one; otherwise the status decides: 401
 * `unauthorized` and 403 `forbidden` are not temporary, anything else (a proxy's 502, say) is.
 */
internal fun upgradeRefusal(status: Int, body: String?): GatewayException {
    val json = try {
        body?.let { Bounds.parseJson(it) as? JsonObject }
    } catch (e: Exception) {
        null
    }
    val code = json?.str("error") ?: when (status) {
        401 -> "unauthorized"
        403 -> "forbidden"
        429 -> "rate_limited"
        else -> "http_error"
    }
    val temporary = (json?.get("temporary") as? JsonPrimitive)?.booleanOrNull ?: (status != 401 && status != 403)
    val message = json?.str("message")?.let { ": $it" } ?: ""
    return GatewayException(code, "the gateway refused the connection with HTTP $status $code$message", temporary)
}

private fun refusalBody(r: Response): String? = try {
    r.peekBody(MAX_REFUSAL_BODY).string()
} catch (e: Exception) {
    null // cut short, or cancelled by the connect timeout
}

/**
 * One explicit state: `IDLE` (never connected), `CONNECTING` (a token or a socket is on its way), `OPEN`,
 * `WAITING` (backing off before the next attempt), `PAUSED` (the app is in the background), `CLOSED` (for good).
 */
enum class ConnectionState { IDLE, CONNECTING, OPEN, WAITING, PAUSED, CLOSED }

/** What the connection tells its owner, on the client's thread. */
internal interface ConnectionHooks {
    fun emit(e: GatewayEvent)

    /** The socket opened (state is OPEN): resubscribe and flush. */
    fun opened(ws: WebSocket)

    /** A frame that is not a reply to a request; false when nobody took it. */
    fun frame(ws: WebSocket, f: ReceivedFrame): Boolean

    /** The connection stopped for good (close(), 4403, 4001 without getToken, a refused upgrade): fail what waits. */
    fun stopped(error: GatewayException)
}

/**
 * The request that opens the socket, with the token where [via] puts it. The [wire]'s subprotocol goes with a
 * `bearer.` one, and alone when it must be asked for (the binary one: a gateway speaks JSON unless asked).
 * The URL says `coalesce=1`: the client reads coalesced frames (Coalesced.kt).
 */
fun connectRequest(url: String, token: String?, via: TokenVia, wire: Wire = Wire.JSON): Request {
    val wsUrl = url.replace(Regex("^http(s?):"), "ws$1:")
    // OkHttp takes ws(s) URLs in requests but parses them as http(s).
    val httpUrl = wsUrl.replace(Regex("^ws(s?):"), "http$1:").toHttpUrl().newBuilder().addQueryParameter(COALESCE_QUERY, "1").build()
    val b = Request.Builder().url(httpUrl)
    if (wire != Wire.JSON) b.header("Sec-WebSocket-Protocol", wire.subprotocol)
    if (token == null) return b.build()
    return when (via) {
        TokenVia.HEADER -> b.header("Authorization", "Bearer $token").build()
        TokenVia.PROTOCOL -> b.header("Sec-WebSocket-Protocol", "${wire.subprotocol}, bearer.$token").build()
        TokenVia.QUERY -> b.url(httpUrl.newBuilder().addQueryParameter("token", token).build()).build()
    }
}

/**
 * The socket and its lifecycle: opening (with a fresh token), the connect timeout, full-jitter reconnects, the
 * ping that finds a dead link, close codes, pause and resume, and request/reply by `id`. It knows nothing of
 * subscriptions or publishes. Every method runs on the client's single-threaded dispatcher ([scope]).
 */
internal class Connection(
    private val url: String,
    private val opts: GatewayClientOptions,
    private val http: OkHttpClient,
    private val scope: CoroutineScope,
    private val hooks: ConnectionHooks,
    private val onReconnect: () -> Unit,
) {
    private val stateFlow = MutableStateFlow(ConnectionState.IDLE)

    /** [state] as a flow the app can collect (read from any thread). */
    val states: StateFlow<ConnectionState> = stateFlow.asStateFlow()

    var state: ConnectionState
        get() = stateFlow.value
        private set(value) {
            stateFlow.value = value
        }

    /** How the last attempt or socket ended ("1006 Connection refused"), for a connect() that gives up waiting. */
    var lastFailure: String? = null
        private set

    /** The current socket (read from other threads by acks: `@Volatile`). */
    @Volatile var ws: WebSocket? = null
        private set

    /** Why the connection stopped; later calls fail with it. */
    var stopped: GatewayException? = null
        private set

    /** The token the next connect presents when there is no getToken (refreshToken replaces it). */
    var token: String? = opts.token

    private var attempt = 0
    private var reconnectJob: Job? = null
    private var connectTimer: Job? = null
    private var pingJob: Job? = null
    private var nextId = 1L
    private val pending = HashMap<Long, Pending>()

    /** How frames are written and read (fixed by the options: every socket of the client speaks the same). */
    private val codec = codecOf(opts.wire)
    private val firstOpen = CompletableDeferred<Unit>()
    private var closedSignal: CompletableDeferred<Unit>? = null

    private class Pending(val onReply: (JsonObject) -> Unit, val onLost: () -> Unit)

    /** Starts connecting (and reconnecting); completes on the first successful open. */
    fun connect(): CompletableDeferred<Unit> {
        if (state == ConnectionState.IDLE) scope.launch { open() }
        return firstOpen
    }

    /** The connection is healthy again (every subscription resumed): the next failure starts the backoff over. */
    fun resetBackoff() {
        attempt = 0
    }

    /** Sends [frame] with a fresh `id`; [onReply] gets the frame that answers it, [onLost] runs if the socket goes first. */
    fun request(ws: WebSocket, frame: JsonObject, onReply: (JsonObject) -> Unit, onLost: () -> Unit = {}) {
        val id = nextId++
        pending[id] = Pending(onReply, onLost)
        if (!codec.send(ws, JsonObject(frame + ("id" to JsonPrimitive(id))))) {
            pending.remove(id) // closing: its close event re-sends what needs it
            onLost()
        }
    }

    /** Sends [frame] as it is (no reply expected); false when the socket is closing. */
    fun send(ws: WebSocket, frame: JsonObject): Boolean = codec.send(ws, frame)

    /** Stops for good with [error] and closes the socket with 1000; completes once it is closed. */
    suspend fun close(error: GatewayException) {
        if (state == ConnectionState.CLOSED) return
        stop(error)
        val ws = ws ?: return
        val done = CompletableDeferred<Unit>().also { closedSignal = it }
        ws.close(1000, "client closed")
        if (withTimeoutOrNull(CLOSE_WAIT_MS) { done.await() } == null) {
            ws.cancel()
            lost(ws, 1006, "client closed (no close frame from the server)")
        }
    }

    /** The app went to the background: the socket closes, nothing reconnects until [resume]. */
    fun pause() {
        if (state == ConnectionState.CLOSED || state == ConnectionState.PAUSED) return
        val ws = ws
        state = ConnectionState.PAUSED
        reconnectJob?.cancel()
        if (ws != null) {
            detach()
            ws.close(1000, "paused")
        }
        hooks.emit(GatewayEvent.Disconnected(1000, "paused", willReconnect = false))
    }

    /** Back in the foreground: connect now, without backoff. */
    fun resume() {
        if (state != ConnectionState.PAUSED) return
        attempt = 0
        scope.launch { open() }
    }

    /** The network changed: drop the socket (or the wait) and connect at once, the backoff started over. */
    fun reconnectNow() {
        when (state) {
            ConnectionState.OPEN, ConnectionState.CONNECTING -> {
                val ws = ws
                detach()
                ws?.cancel()
                hooks.emit(GatewayEvent.Disconnected(CLOSE_CLIENT_RETRY, "reconnectNow", willReconnect = true, reconnectInMs = 0))
            }
            ConnectionState.WAITING -> reconnectJob?.cancel()
            else -> return
        }
        attempt = 0
        state = ConnectionState.CONNECTING
        scope.launch { open() }
    }

    private suspend fun open() {
        state = ConnectionState.CONNECTING
        val generation = ++generations
        hooks.emit(GatewayEvent.Connecting(attempt))
        var token = this.token
        val getToken = opts.getToken
        if (getToken != null) {
            token = try {
                getToken()
            } catch (e: Exception) {
                hooks.emit(GatewayEvent.Error(GatewayException("token_error", "getToken failed: ${e.message}", cause = e)))
                scheduleReconnect()
                return
            }
            if (state != ConnectionState.CONNECTING || generation != generations) return
        }
        val request = try {
            connectRequest(url, token, opts.tokenVia, opts.wire)
        } catch (e: IllegalArgumentException) {
            stop(GatewayException("bad_option", "not a WebSocket URL: $url", temporary = false, cause = e))
            return
        }
        val ws = http.newWebSocket(request, Listener())
        this.ws = ws
        connectTimer = scope.launch {
            delay(opts.connectTimeoutMs)
            if (this@Connection.ws === ws && state == ConnectionState.CONNECTING) {
                ws.cancel()
                lost(ws, 1006, "connect timeout")
            }
        }
    }

    private var generations = 0

    private inner class Listener : WebSocketListener() {
        override fun onOpen(webSocket: WebSocket, response: Response) {
            val selected = response.header("Sec-WebSocket-Protocol")
            scope.launch { if (ws === webSocket) opened(webSocket, selected) }
        }

        override fun onMessage(webSocket: WebSocket, text: String) {
            scope.launch { if (ws === webSocket) onFrames(webSocket, codec.framesOfText(text)) }
        }

        override fun onMessage(webSocket: WebSocket, bytes: ByteString) {
            scope.launch { if (ws === webSocket) onFrames(webSocket, codec.framesOfBinary(bytes.toByteArray())) }
        }

        override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
            webSocket.close(1000, null)
            scope.launch { lost(webSocket, code, reason) }
        }

        override fun onClosed(webSocket: WebSocket, code: Int, reason: String) {
            scope.launch { lost(webSocket, code, reason) }
        }

        override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) {
            // The body is readable only now: OkHttp closes the response when this returns.
            val refusal = response?.let { upgradeRefusal(it.code, refusalBody(it)) }
            scope.launch {
                if (refusal != null) refused(webSocket, refusal) else lost(webSocket, 1006, t.message ?: t.toString())
            }
        }
    }

    /**
     * The gateway answered the upgrade with an HTTP error (401 for a refused token, 403, 429, 503, …). A temporary
     * refusal reconnects with backoff as any other failure. Any other stops the client, except `unauthorized` with
     * a getToken, which gets one more attempt (with the token getToken gives then) unless it just had it.
     */
    private fun refused(ws: WebSocket, error: GatewayException) {
        if (this.ws !== ws) return
        hooks.emit(GatewayEvent.Error(error))
        val reason = error.message ?: error.code
        if (error.temporary || (error.code == "unauthorized" && opts.getToken != null && !retriedRefusal)) {
            if (!error.temporary) retriedRefusal = true
            return lost(ws, 1006, reason)
        }
        detach()
        end(1006, reason, error)
    }

    /** Set by an `unauthorized` refusal that a fresh token may cure; cleared by the next open. */
    private var retriedRefusal = false

    private fun opened(ws: WebSocket, selected: String?) {
        connectTimer?.cancel()
        if (state != ConnectionState.CONNECTING) return
        if (opts.wire != Wire.JSON && selected?.trim() != opts.wire.subprotocol) {
            // A gateway without the binary subprotocol answers in JSON: reconnecting would not change that.
            stop(GatewayException("bad_option", "the gateway did not select ${opts.wire.subprotocol} (it answered ${selected ?: "none"}): use Wire.JSON", temporary = false))
            ws.close(1000, "subprotocol not selected")
            return
        }
        state = ConnectionState.OPEN
        retriedRefusal = false
        hooks.emit(GatewayEvent.Connected)
        firstOpen.complete(Unit)
        hooks.opened(ws)
        if (opts.pingIntervalMs > 0) pingJob = scope.launch { pingLoop(ws) }
    }

    /** Nothing heard within the ping timeout is a dead link (half-open: nothing arrives, nothing closes): drop it. */
    private suspend fun pingLoop(ws: WebSocket) {
        while (this.ws === ws) {
            delay(opts.pingIntervalMs)
            val heard = CompletableDeferred<Unit>().also { heardSincePing = it }
            request(ws, JsonObject(mapOf("op" to JsonPrimitive("ping"))), {})
            if (withTimeoutOrNull(opts.pingTimeoutMs) { heard.await() } != null) continue
            if (this.ws !== ws) return
            hooks.emit(GatewayEvent.Error(GatewayException("ping_timeout", "nothing heard ${opts.pingTimeoutMs} ms after a ping: the link is dead", temporary = true)))
            ws.cancel()
            lost(ws, 1006, "ping timeout")
            return
        }
    }

    /** Completed by any frame that arrives: the link carries bytes. */
    private var heardSincePing: CompletableDeferred<Unit>? = null

    /** A WebSocket frame's frames in order (several when coalesced), each while the socket is still the current one. */
    private fun onFrames(ws: WebSocket, frames: List<ReceivedFrame>?) {
        if (frames == null) return onFrame(ws, null)
        for (f in frames) if (this.ws === ws) onFrame(ws, f)
    }

    /** A frame as the codec read it: null when it could not (a text frame on the binary wire, say). */
    private fun onFrame(ws: WebSocket, received: ReceivedFrame?) {
        heardSincePing?.complete(Unit)
        if (received == null) return protocolError(ws)
        if (hooks.frame(ws, received)) return
        val f = received.fields
        val id = (f["id"] as? JsonPrimitive)?.takeIf { !it.isString }?.longOrNull
        val p = id?.let { pending.remove(it) }
        if (p != null) return p.onReply(f)
        if (f.str("op") == "err") hooks.emit(GatewayEvent.Error(wireError(f)))
    }

    /**
     * The server sent what is not a frame of the wire (malformed, a length declared past the frame's end, nested
     * deeper than [MAX_FRAME_DEPTH], or text on the binary wire): the socket is closed with 1002 (protocol error)
     * at once, without waiting for the server's close, and the client reconnects as after any other loss.
     */
    private fun protocolError(ws: WebSocket) {
        val why = "the server sent a frame that is not ${opts.wire.subprotocol} (malformed, or past the client's bounds)"
        hooks.emit(GatewayEvent.Error(GatewayException("bad_json", why, temporary = true)))
        ws.close(CLOSE_PROTOCOL_ERROR, "bad frame")
        lost(ws, CLOSE_PROTOCOL_ERROR, why)
    }

    /** Forgets the current socket: timers stop, requests waiting on it are lost. */
    private fun detach() {
        connectTimer?.cancel()
        pingJob?.cancel()
        ws = null
        val lost = pending.values.toList()
        pending.clear()
        for (p in lost) p.onLost()
    }

    /** The socket is gone with [code]: reconnect, or stop when the code says so. */
    private fun lost(ws: WebSocket, code: Int, reason: String) {
        if (this.ws !== ws) return
        detach()
        lastFailure = "$code $reason"
        if (state == ConnectionState.CLOSED) {
            hooks.emit(GatewayEvent.Disconnected(code, reason, willReconnect = false))
            closedSignal?.complete(Unit)
            return
        }
        // 4403: the server disconnected this user and asks it not to come back (4012 asks for a reconnect).
        if (code == 4403) {
            return end(code, reason, GatewayException("disconnected", "disconnected by the server (close 4403): $reason", temporary = false))
        }
        if (code == 4001) {
            hooks.emit(GatewayEvent.TokenExpired)
            if (opts.getToken == null) {
                return end(code, reason, GatewayException("token_expired", "the token expired (close 4001) and no getToken is set", temporary = false))
            }
        }
        val delayMs = scheduleReconnect()
        hooks.emit(GatewayEvent.Disconnected(code, reason, willReconnect = true, reconnectInMs = delayMs))
    }

    private fun scheduleReconnect(): Long {
        val delayMs = backoffDelay(attempt, opts.minDelayMs, opts.maxDelayMs)
        attempt++
        state = ConnectionState.WAITING
        reconnectJob = scope.launch {
            delay(delayMs)
            if (state != ConnectionState.WAITING) return@launch
            onReconnect()
            open()
        }
        return delayMs
    }

    /**
     * The one way a lost socket ends the client for good: [state] is `CLOSED` before the final `Disconnected` is
     * emitted, so whoever hears that event (a listener, a collector on any dispatcher) reads `CLOSED` and a call made
     * then fails with the reason, never the state of the attempt that just failed; then what waits is failed.
     */
    private fun end(code: Int, reason: String, error: GatewayException) {
        state = ConnectionState.CLOSED
        stopped = error
        hooks.emit(GatewayEvent.Disconnected(code, reason, willReconnect = false))
        stop(error)
    }

    private fun stop(error: GatewayException) {
        state = ConnectionState.CLOSED
        stopped = error
        reconnectJob?.cancel()
        connectTimer?.cancel()
        pingJob?.cancel()
        firstOpen.completeExceptionally(error)
        hooks.stopped(error)
    }

    private companion object {
        const val CLOSE_WAIT_MS = 3_000L
    }
}

internal fun JsonElement?.asObject(): JsonObject? = this as? JsonObject
