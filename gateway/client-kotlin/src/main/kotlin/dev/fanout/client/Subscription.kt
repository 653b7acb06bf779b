package dev.fanout.client

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow

/** The client's record of one subscription; only the client's thread touches it. */
internal class Sub(
    val channel: String,
    val opts: SubscribeOptions,
    val pos: Position,
    /** A server-side subscription (announced by the server, not asked for by `subscribe()`). */
    val auto: Boolean,
    /** Took a server-side subscription over: resumes from where that one was, even before a message of its own. */
    val takesOver: Boolean = false,
) {
    var closed = false

    /** A resubscribe is waiting for its ok: frames of the server-side subscription it takes over are dropped. */
    var resuming = false
    var client: String? = null

    /** Refreshes its subscription token before the token's `exp` (GatewayClientOptions.getSubscriptionToken). */
    var tokenRefresh: Job? = null

    /** A `delta: "fossil"` subscription's bases per channel. */
    val deltas: DeltaBases? = if (opts.delta != null && opts.durable == null) DeltaBases() else null
    val ready = CompletableDeferred<SubscribeInfo>()

    /** Messages for the Flow's collector; unbounded, as the socket does not wait for the app either. */
    val inbox = Channel<GatewayMessage>(Channel.UNLIMITED)
    val autoAck = opts.autoAck ?: opts.ack
}

/**
 * A subscription that survives reconnects: it resumes after the last seq delivered (from the same stream,
 * by its epoch), dropping duplicates, and reports a `Gap` event when the resume point is gone.
 */
class Subscription internal constructor(private val sub: Sub, private val end: (Sub) -> Unit) {
    val channel: String get() = sub.channel

    /** The server's first `ok`. */
    val info: SubscribeInfo = sub.ready.getCompleted()

    /** The last seq delivered (0: none yet); with [epoch] the position a later subscribe can resume from. */
    val lastSeq: Long get() = sub.pos.lastSeq
    val epoch: String? get() = sub.pos.epoch

    /** With presence: this connection's presence id in the channel (a new one after a reconnect). */
    val client: String? get() = sub.client

    /**
     * The messages, in order, for one collector. With `autoAck` (the default of `ack = true`) each message is
     * acked once the collector returns from it, and nak'ed when the collector throws. The Flow ends after
     * [unsubscribe], and throws the server's error when the server ended the subscription.
     */
    val messages: Flow<GatewayMessage> = flow {
        for (m in sub.inbox) {
            try {
                emit(m)
            } catch (e: Throwable) {
                if (sub.autoAck) m.nak()
                throw e
            }
            if (sub.autoAck) m.ack()
        }
    }

    /** Ends the subscription (the socket's `unsub`); its Flow completes. */
    fun unsubscribe() = end(sub)
}
