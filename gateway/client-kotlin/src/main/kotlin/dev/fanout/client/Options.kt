package dev.fanout.client

import kotlinx.coroutines.CoroutineDispatcher
import okhttp3.OkHttpClient

/** Where the token goes when the socket opens (PROTOCOL.md "Passing the token"). */
enum class TokenVia {
    /** `Authorization: Bearer <token>`: the default on the JVM and Android, which can set headers. */
    HEADER,

    /** `Sec-WebSocket-Protocol: fanout.v1, bearer.<token>`, as browsers do. */
    PROTOCOL,

    /** `?token=`, in the URL, where proxies and access logs keep it: a last resort. */
    QUERY,
}

/** A [GatewayClient]'s settings; every number is checked when the client is made. */
class GatewayClientOptions {
    /** The token of the first connect (and of later ones unless [getToken] is set or [GatewayClient.refreshToken] replaced it). */
    var token: String? = null

    /** Called before every connect for a fresh token; also makes the client reconnect after a 4001 close. */
    var getToken: (suspend () -> String)? = null
    var tokenVia: TokenVia = TokenVia.HEADER

    /**
     * A subscription token for a channel (a JWT from the app's backend naming it; AUTH.md "Subscription
     * tokens"), or null to subscribe with the connection's own rights. Asked at each `subscribe()`, at every
     * resubscribe after a reconnect, and before the token's `exp` to refresh it (`sub_refresh`).
     */
    var getSubscriptionToken: (suspend (String) -> String?)? = null

    /**
     * How frames travel: [Wire.JSON] (`fanout.v1`, text) or [Wire.MSGPACK] (`fanout.v1.msgpack`, binary
     * MessagePack: smaller frames, and payloads that are not JSON come as [GatewayMessage.bytes]).
     */
    var wire: Wire = Wire.JSON

    /** Reconnect delay bounds: delay = random(0, min(maxDelayMs, minDelayMs·2^attempt)). */
    var minDelayMs: Long = 250
    var maxDelayMs: Long = 15_000

    /** Most publishes held while disconnected; more fail with `queue_full`. */
    var queueLimit: Int = 1_000

    /** A connection attempt that has not opened after this long is abandoned and retried. */
    var connectTimeoutMs: Long = 10_000

    /**
     * How long [GatewayClient.connect] waits for the first open before it throws `timeout` (a closed port, no
     * network); the client goes on trying in the background until [GatewayClient.close].
     */
    var connectWaitMs: Long = 10_000

    /** How long [GatewayClient.subscribe] waits for the server's `ok` before it throws `timeout` (the subscription is dropped). */
    var subscribeTimeoutMs: Long = 10_000

    /**
     * How long a publish (or a batch) waits for the server's answer, time queued while disconnected included,
     * before it throws `timeout` (temporary) and leaves the queue. The message may still have been stored:
     * publish it again with the same msgId, and the server stores it once.
     */
    var publishTimeoutMs: Long = 15_000

    /**
     * How long [GatewayClient.rpc] waits for the answer before it throws `timeout` (temporary). Longer than the
     * server's own deadline for the backend (`RPC_HOOK_TIMEOUT`, 5 s by default), so that its `hook_unavailable` comes first.
     */
    var rpcTimeoutMs: Long = 15_000

    /** How long [GatewayClient.history] waits for the page (request, answer and parsing) before it throws `timeout`. */
    var historyTimeoutMs: Long = 15_000

    /**
     * Messages a subscription holds for its collector. When a collector falls this far behind, the client stops
     * the subscription on the server (`unsub`) and makes it again from the last message it holds once the
     * collector has taken half of them: nothing is dropped, as with a reconnect. (A durable with `ack` naks
     * instead, to be redelivered; a durable without `ack` is not bounded, as nothing could bring a message back.)
     */
    var subscriptionBuffer: Int = 1_000

    /** While connected, a `ping` frame goes out this often (0: never). */
    var pingIntervalMs: Long = 20_000

    /**
     * Nothing at all heard within this long of a ping means a dead link (a half-open one, as after a network
     * change): the socket is dropped at once and the client reconnects. Found within pingIntervalMs + pingTimeoutMs.
     */
    var pingTimeoutMs: Long = 10_000

    /**
     * Messages of server-side subscriptions (the token's `channels.auto`, or a connect hook's), called on the
     * client's thread. They resume after reconnects like `subscribe()`'s; without it their messages are dropped.
     */
    var onAutoMessage: ((GatewayMessage) -> Unit)? = null

    /** The OkHttp client to share with the app (its pool and threads); by default the client makes its own. */
    var okHttpClient: OkHttpClient? = null

    /**
     * Where listeners, `onPresence` and `onAutoMessage` run, one at a time and in order: `Dispatchers.Main` for
     * UI code. Null (the default): on the client's own thread, as they happen (return quickly).
     */
    var callbackDispatcher: CoroutineDispatcher? = null

    /** Where the client reports its own problems (a listener that threw, a full subscription buffer). */
    var logHandler: GatewayLogHandler = GatewayLogHandler.JAVA_LOGGING

    internal fun check() {
        fun bad(why: String): Nothing = throw GatewayException("bad_option", why, temporary = false)
        if (minDelayMs < 0) bad("minDelayMs must be >= 0, got $minDelayMs")
        if (maxDelayMs < minDelayMs) bad("maxDelayMs must be >= minDelayMs ($minDelayMs), got $maxDelayMs")
        if (queueLimit < 0) bad("queueLimit must be >= 0, got $queueLimit")
        if (connectTimeoutMs <= 0) bad("connectTimeoutMs must be > 0, got $connectTimeoutMs")
        if (connectWaitMs <= 0) bad("connectWaitMs must be > 0, got $connectWaitMs")
        if (subscribeTimeoutMs <= 0) bad("subscribeTimeoutMs must be > 0, got $subscribeTimeoutMs")
        if (publishTimeoutMs <= 0) bad("publishTimeoutMs must be > 0, got $publishTimeoutMs")
        if (rpcTimeoutMs <= 0) bad("rpcTimeoutMs must be > 0, got $rpcTimeoutMs")
        if (historyTimeoutMs <= 0) bad("historyTimeoutMs must be > 0, got $historyTimeoutMs")
        if (subscriptionBuffer < 2) bad("subscriptionBuffer must be >= 2, got $subscriptionBuffer")
        if (pingIntervalMs < 0) bad("pingIntervalMs must be >= 0, got $pingIntervalMs")
        if (pingTimeoutMs <= 0) bad("pingTimeoutMs must be > 0, got $pingTimeoutMs")
    }
}
