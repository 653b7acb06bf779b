package dev.fanout.client

import java.util.concurrent.atomic.AtomicBoolean
import kotlinx.serialization.json.JsonElement

/**
 * A delivered message. [ack], [nak], [term] and [inProgress] do something only on `ack = true` subscriptions:
 * the frame goes on the socket the message came on, and is moot when that socket is gone (the server released
 * its unacked messages for redelivery).
 */
class GatewayMessage internal constructor(
    val channel: String,
    /** The pattern of the subscription it is for. */
    val sub: String,
    val seq: Long,
    /** Broker timestamp, ms since the epoch (µs precision). */
    val ts: Double,
    /**
     * The payload: its JSON value; with [enc] "text" the string, with "base64" the base64 of the bytes
     * (fanout.v1); with "binary" (fanout.v1.msgpack) JsonNull, the bytes being in [bytes].
     */
    val data: JsonElement,
    /**
     * Null for a JSON payload; "text" (UTF-8 that is not JSON), "base64" (other bytes, on fanout.v1) or "binary"
     * (other bytes, on fanout.v1.msgpack) for a payload that was stored by something other than the gateway.
     */
    val enc: String?,
    /** The payload's bytes when they are not JSON or text (enc "binary", or "base64" decoded); null otherwise. */
    val bytes: ByteArray?,
    /**
     * A binary payload's content type (bytes published with one, PROTOCOL.md "Binary payloads"): [bytes] holds
     * the bytes (on fanout.v1 [data] is their base64).
     */
    val type: String?,
    val durable: String?,
    val redelivered: Boolean,
    val deliveries: Int?,
    /**
     * The epoch of the stream [seq] belongs to (from the server's `ok`): save `seq` and `epoch` once the message
     * is handled, and resume a later process with `StartPosition.Seq(seq + 1, epoch)`.
     */
    val epoch: String?,
    explicitAck: Boolean,
    private val send: (Settle) -> Unit,
) {
    private val settled = AtomicBoolean(!explicitAck)

    fun ack() = settle(Settle("ack", seq, sub))

    /** Asks for redelivery, after [delayMs] when given. */
    fun nak(delayMs: Long? = null) = settle(Settle("nak", seq, sub, delayMs))

    /** Stops redelivery of this message. */
    fun term() = settle(Settle("term", seq, sub))

    /** Restarts the message's ack wait on the server; call it more often than the gateway's DURABLE_ACK_WAIT. */
    fun inProgress() {
        if (!settled.get()) send(Settle("inprogress", seq, sub))
    }

    private fun settle(s: Settle) {
        if (settled.compareAndSet(false, true)) send(s)
    }

    /** Where this message is in its stream: what to save once it is handled. */
    val position: StreamPosition get() = StreamPosition(seq, epoch)

    override fun toString() = "GatewayMessage(channel=$channel, seq=$seq, data=$data)"
}

/** An ack, nak, term or inprogress frame. */
internal data class Settle(val op: String, val seq: Long, val sub: String, val delayMs: Long? = null)
