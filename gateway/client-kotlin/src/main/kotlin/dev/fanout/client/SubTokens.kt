package dev.fanout.client

import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import okio.ByteString.Companion.decodeBase64

/** A subscription token is refreshed (`sub_refresh`) once this share of its remaining lifetime has passed. */
internal const val SUB_TOKEN_REFRESH_AT = 0.8

/** The `exp` claim of a JWT (read, not verified: the server verifies), or null. */
internal fun tokenExp(token: String): Long? = runCatching {
    val payload = token.split(".").getOrNull(1)?.decodeBase64()?.utf8() ?: return null
    (Json.parseToJsonElement(payload) as? JsonObject)?.long("exp")
}.getOrNull()

/** Bytes of a base64 payload (history's `"enc":"base64"`), without java.util.Base64 (API 26). */
internal fun base64Bytes(s: String?): ByteArray? = s?.decodeBase64()?.toByteArray()
