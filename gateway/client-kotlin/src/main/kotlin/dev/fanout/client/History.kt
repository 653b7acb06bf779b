package dev.fanout.client

import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import kotlinx.serialization.json.JsonObject
import okhttp3.Call
import okhttp3.Callback
import okhttp3.HttpUrl
import okhttp3.HttpUrl.Companion.toHttpUrl
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.Response
import java.io.IOException

/** History over HTTP on the gateway's port (PROTOCOL.md "HTTP on the same port"). */
internal class History(private val http: OkHttpClient, wsUrl: String) {
    private val base: HttpUrl = wsUrl.replace(Regex("^ws(s?):"), "http$1:").toHttpUrl()

    suspend fun read(channel: String, token: String?, fromSeq: Long?, last: Int?, limit: Int?, reverse: Boolean = false, beforeSeq: Long? = null): HistoryPage {
        val url = historyUrl(base, channel, fromSeq, last, limit, reverse, beforeSeq)
        val request = Request.Builder().url(url).apply { if (token != null) header("Authorization", "Bearer $token") }.build()
        val (status, body) = call(request)
        // A page of a thousand messages takes tens of milliseconds to parse: never on the caller's (main) thread.
        return withContext(Dispatchers.Default) { parse(status, body) }
    }

    private fun parse(status: Int, body: String): HistoryPage {
        val json = try {
            Bounds.parseJson(body, MAX_FRAME_DEPTH + 2) as? JsonObject // a message's data is two levels further in than in a frame
        } catch (e: Exception) {
            null
        }
        if (status != 200 || json == null) {
            throw json?.let(::wireError) ?: GatewayException("http_error", "history answered HTTP $status", temporary = status >= 500)
        }
        return historyPage(json)
    }

    private suspend fun call(request: Request): Pair<Int, String> = suspendCancellableCoroutine { cont ->
        val call = http.newCall(request)
        cont.invokeOnCancellation { call.cancel() }
        call.enqueue(
            object : Callback {
                override fun onFailure(call: Call, e: IOException) =
                    cont.resumeWithException(GatewayException("http_error", "history request failed: ${e.message}", temporary = true, cause = e))

                override fun onResponse(call: Call, response: Response) {
                    val result = response.use { it.code to (it.body?.string() ?: "") }
                    cont.resume(result)
                }
            },
        )
    }
}

/** `GET /v1/channels/{channel}/messages` with its query, on the origin of the WebSocket URL. */
fun historyUrl(base: HttpUrl, channel: String, fromSeq: Long?, last: Int?, limit: Int?, reverse: Boolean = false, beforeSeq: Long? = null): HttpUrl =
    base.newBuilder()
        .encodedPath("/")
        .query(null)
        .addPathSegments("v1/channels")
        .addPathSegment(channel)
        .addPathSegment("messages")
        .apply {
            fromSeq?.let { addQueryParameter("from_seq", it.toString()) }
            last?.let { addQueryParameter("last", it.toString()) }
            limit?.let { addQueryParameter("limit", it.toString()) }
            if (reverse) addQueryParameter("reverse", "1")
            beforeSeq?.let { addQueryParameter("before_seq", it.toString()) }
        }
        .build()
