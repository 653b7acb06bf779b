package dev.fanout.client

/** Lifecycle events of a [GatewayClient] (listen with [GatewayClient.addListener]). */
sealed interface GatewayEvent {
    /** A connection attempt starts ([attempt] 0 is the first since the last success). */
    data class Connecting(val attempt: Int) : GatewayEvent

    /** The socket is open; resubscribes are on their way. */
    data object Connected : GatewayEvent

    /** The socket closed; [reconnectInMs] is the backoff delay when [willReconnect]. */
    data class Disconnected(val code: Int, val reason: String, val willReconnect: Boolean, val reconnectInMs: Long? = null) : GatewayEvent

    /** Every subscription got its `ok` again after a (re)connect; the backoff starts over. */
    data class Resubscribed(val subscriptions: Int) : GatewayEvent

    /** The server subscribed this connection to [channel] (a server-side subscription). */
    data class AutoSubscribed(val channel: String, val seq: Long) : GatewayEvent

    /** Messages the subscription asked for are gone: retention removed them, or ([epochChanged]) the stream was recreated. */
    data class Gap(val channel: String, val expectedSeq: Long, val firstSeq: Long, val epochChanged: Boolean = false) : GatewayEvent

    /** The server closed with 4001 (token expired). */
    data object TokenExpired : GatewayEvent

    /** Something failed: a server `err`, a refused subscribe, a `getToken` that threw, a dead link. */
    data class Error(val error: GatewayException, val channel: String? = null) : GatewayEvent
}

/** Receives a client's events, on the client's own thread: return quickly. */
fun interface GatewayListener {
    fun onEvent(event: GatewayEvent)
}
