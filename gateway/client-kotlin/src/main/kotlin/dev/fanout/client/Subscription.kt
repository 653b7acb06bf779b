package dev.fanout.client

import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.isActive

/** The client's record of one subscription; only the client's thread touches it, except where marked. */
internal class Sub(
    val channel: String,
    val opts: SubscribeOptions,
    val pos: Position,
    /** A server-side subscription (announced by the server, not asked for by `subscribe()`). */
    val auto: Boolean,
    /** Took a server-side subscription over: resumes from where that one was, even before a message of its own. */
    val takesOver: Boolean = false,
    /** Most messages held for the collector (GatewayClientOptions.subscriptionBuffer). */
    bufferSize: Int = Int.MAX_VALUE,
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

    /** A durable without acks cannot get a message back from the server: its buffer is the one not bounded. */
    val limit: Int = if (opts.durable != null && !opts.ack) Int.MAX_VALUE else bufferSize

    /** Messages for the Flow's collector; never more than [limit], counted by [buffered] (read on both sides). */
    val inbox = Channel<GatewayMessage>(if (limit == Int.MAX_VALUE) Channel.UNLIMITED else limit)
    val buffered = AtomicInteger()

    /** The buffer filled up: the server's subscription is stopped until the collector has taken half of it. */
    @Volatile var overflowed = false
    val autoAck = opts.autoAck ?: opts.ack

    /** Set by the collector: the last message handed to it, and whether one is collecting now. */
    @Volatile var handed: StreamPosition? = null
    val collecting = AtomicBoolean(false)

    /** A message whose collector was cancelled while it held it: handed again to the next collector. */
    var unhandled: GatewayMessage? = null
}

/**
 * A subscription that survives reconnects: it resumes after the last seq delivered (from the same stream,
 * by its epoch), dropping duplicates, and reports a `Gap` event when the resume point is gone.
 */
class Subscription internal constructor(
    private val sub: Sub,
    private val end: (Sub) -> Unit,
    private val taken: (Sub) -> Unit = {},
) {
    val channel: String get() = sub.channel

    /** The server's first `ok`. */
    val info: SubscribeInfo = sub.ready.getCompleted()

    /**
     * The last seq received (0: none yet), which may be up to a buffer ahead of what the collector was handed:
     * to resume after a crash, save [position] (or the message's `seq` and `epoch`) instead.
     */
    val lastSeq: Long get() = sub.pos.lastSeq
    val epoch: String? get() = sub.pos.epoch

    /**
     * The last message handed to the collector (null before the first): inside `collect { m -> … }` it is `m`'s.
     * Save it once the message is handled; `position.next()` resumes a later subscribe after it.
     */
    val position: StreamPosition? get() = sub.handed

    /** With presence: this connection's presence id in the channel (a new one after a reconnect). */
    val client: String? get() = sub.client

    /**
     * The messages, in order, for one collector at a time: a second collector while one is collecting throws
     * IllegalStateException (fan out with `shareIn`); after the first ends (a `repeatOnLifecycle` that stopped)
     * the next one goes on where it was, a message its collector was cancelled on handed again. With `autoAck`
     * (the default of `ack = true`) each message is acked once the collector returns from it, and nak'ed when the
     * collector throws. The Flow completes after [unsubscribe] and after the client's close, and throws the
     * server's error when the server ended the subscription (or the client stopped for good, 4403 say).
     */
    val messages: Flow<GatewayMessage> = flow {
        check(sub.collecting.compareAndSet(false, true)) {
            "the messages of ${sub.channel} already have a collector: collect them once (shareIn to fan out)"
        }
        try {
            while (true) {
                val m = sub.unhandled?.also { sub.unhandled = null } ?: next() ?: break
                val before = sub.handed
                sub.handed = m.position
                try {
                    emit(m)
                } catch (e: Throwable) {
                    if (sub.autoAck) {
                        m.nak()
                    } else if (e is CancellationException && !currentCoroutineContext().isActive) {
                        sub.unhandled = m
                        sub.handed = before
                    }
                    throw e
                }
                if (sub.autoAck) m.ack()
            }
        } finally {
            sub.collecting.set(false)
        }
    }

    /** The next buffered message; null once the subscription ended normally (throws its error otherwise). */
    private suspend fun next(): GatewayMessage? {
        val r = sub.inbox.receiveCatching()
        val m = r.getOrNull() ?: return r.exceptionOrNull()?.let { throw it }
        sub.buffered.decrementAndGet()
        taken(sub)
        return m
    }

    /** Ends the subscription (the socket's `unsub`); its Flow completes. */
    fun unsubscribe() = end(sub)
}
