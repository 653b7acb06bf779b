package dev.fanout.client

/**
 * Coalesced frames (PROTOCOL.md "Coalesced frames"): the client connects with `coalesce=1`, so a WebSocket
 * frame may hold several frames. In JSON they are joined by one line feed; the text is split at each `}` LF
 * `{`, three bytes no single JSON text holds (a raw line feed is only whitespace there, and no `{` may follow
 * a `}` across whitespace), so a pretty-printed payload's own line feeds stay inside its frame. A frame with
 * none is one frame. Under fanout.v1.msgpack a coalesced frame is a MessagePack array of the maps
 * (Msgpack.decodeFrames). Codec.framesOfText and framesOfBinary give a WebSocket frame's frames either way.
 */
fun splitCoalesced(text: String): List<String> {
    if (text.indexOf("}\n{") < 0) return listOf(text)
    val parts = text.split("}\n{")
    return parts.mapIndexed { i, p -> (if (i > 0) "{" else "") + p + (if (i < parts.size - 1) "}" else "") }
}

/** The query parameter that says the client reads coalesced frames. */
internal const val COALESCE_QUERY = "coalesce"
