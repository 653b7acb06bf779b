package dev.fanout.client

import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive
import kotlinx.serialization.json.booleanOrNull
import kotlinx.serialization.json.contentOrNull

/**
 * Every wire error code of protocol version 1 and whether retrying can help, as gateway/src/protocol/codes.json
 * has them (CodesTest checks that the two agree). The server says so itself on each `err` frame (`temporary`);
 * this table is the fallback for servers that do not, and a code not in it (one added later) counts as temporary.
 */
val WIRE_CODES: Map<String, Boolean> = mapOf(
    "bad_json" to false,
    "unknown_op" to false,
    "bad_request" to false,
    "bad_channel" to false,
    "too_many_subscriptions" to false,
    "already_subscribed" to false,
    "not_subscribed" to false,
    "payload_too_large" to false,
    "broker_unavailable" to true,
    "broker_error" to true,
    "durable_conflict" to false,
    "unsupported_by_broker" to false,
    "unauthorized" to false,
    "forbidden" to false,
    "rate_limited" to true,
    "unknown_seq" to false,
    "shutting_down" to true,
    "internal" to true,
    "hook_unavailable" to true,
    "presence_full" to true,
    "slow_consumer" to true,
    "too_many_durables" to false,
    "durables_full" to true,
    "disconnected" to false,
    "unsubscribed" to false,
    "feature_disabled" to false,
    "rpc_error" to false,
    "rpc_unavailable" to false,
    "subscription_expired" to true,
    "not_found" to false,
    "method_not_allowed" to false,
    "unsupported_media_type" to false,
    "stats_unavailable" to true,
    "metrics_unavailable" to true,
)

/** Failures of the client itself (not sent by a server). */
val CLIENT_CODES: Set<String> = setOf(
    "bad_option", "queue_full", "closed", "token_expired", "already_subscribed", "unsubscribed", "token_error",
    "not_connected", "connection_lost", "http_error", "handler_error", "ping_timeout", "internal", "timeout",
)

/** Whether retrying can help with [code] when nothing says otherwise: unknown codes are temporary. */
fun isTemporary(code: String): Boolean = WIRE_CODES[code] ?: true

/**
 * A client-side failure or a server `err` (the wire codes of PROTOCOL.md). [temporary] says whether retrying
 * can help; the server says so on each `err` frame. [appCode]: `rpc_error` only, the application backend's own
 * code for the error, when it gave one.
 */
class GatewayException(
    val code: String,
    message: String,
    val temporary: Boolean = isTemporary(code),
    cause: Throwable? = null,
    val appCode: String? = null,
) : Exception(message, cause)

/** The error an `err` frame (or an HTTP error body, whose code is in `error`) stands for. */
fun wireError(f: JsonObject): GatewayException {
    val code = f.str("code") ?: f.str("error") ?: "internal"
    val temporary = (f["temporary"] as? JsonPrimitive)?.booleanOrNull
    return GatewayException(code, f.str("message") ?: f.toString(), temporary ?: isTemporary(code), appCode = f.str("appCode"))
}

internal fun JsonObject.str(key: String): String? = (this[key] as? JsonPrimitive)?.takeIf { it.isString }?.contentOrNull
