package dev.fanout.client

/** How many channels of a wildcard subscription the duplicate check remembers one by one. */
const val MAX_TRACKED_CHANNELS = 10_000

/**
 * Where a non-durable subscription is: the last seq delivered, the stream's epoch it belongs to, and the
 * duplicate check. Order is per channel: on a wildcard subscription a message the server repaired late can
 * follow newer messages of other channels, so the last seq is kept per channel (the newest [maxChannels]
 * channels; a forgotten channel's messages at or below [floor] are old).
 */
class Position(private val maxChannels: Int = MAX_TRACKED_CHANNELS) {
    /** The newest seq delivered (0: none yet). */
    var lastSeq: Long = 0
        internal set

    /** Epoch of the stream [lastSeq] belongs to (from the server's ok). */
    var epoch: String? = null
        internal set

    var floor: Long = 0
        internal set

    private val lastByChannel = LinkedHashMap<String, Long>()

    /** True when [seq] is new on [channel] (and records it); false for a seq at or below the last one there. */
    fun accept(channel: String, seq: Long): Boolean {
        val last = lastByChannel[channel] ?: floor
        if (seq <= last) return false
        lastByChannel.remove(channel)
        lastByChannel[channel] = seq
        if (lastByChannel.size > maxChannels) {
            val oldest = lastByChannel.entries.iterator().next()
            lastByChannel.remove(oldest.key)
            if (oldest.value > floor) floor = oldest.value
        }
        if (seq > lastSeq) lastSeq = seq
        return true
    }

    /** The stream was recreated: its seqs start over. */
    fun reset() {
        lastSeq = 0
        floor = 0
        lastByChannel.clear()
    }

    /** Starts where a server-side subscription was announced: everything at or below [seq] is old. */
    internal fun startAt(seq: Long, epoch: String?) {
        lastSeq = seq
        floor = seq
        this.epoch = epoch
    }

    /** A copy to go on with (a subscribe that takes a server-side subscription over). */
    internal fun copy(): Position = Position(maxChannels).also {
        it.lastSeq = lastSeq
        it.epoch = epoch
        it.floor = floor
        it.lastByChannel.putAll(lastByChannel)
    }
}
