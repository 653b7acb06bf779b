package dev.fanout.client

import okio.ByteString.Companion.decodeBase64
import okio.ByteString.Companion.toByteString

// Base64 through Okio (which OkHttp brings): java.util.Base64 is Android API 26, and the SDK's floor is API 21.

/** The standard base64 (with padding) of these bytes, as the wire carries bytes on fanout.v1. */
internal fun ByteArray.toBase64(): String = toByteString().base64()

/** The bytes of base64 [text]; throws IllegalArgumentException when it is not base64. */
internal fun base64Bytes(text: String): ByteArray =
    requireNotNull(text.decodeBase64()) { "not base64: ${text.take(32)}" }.toByteArray()
