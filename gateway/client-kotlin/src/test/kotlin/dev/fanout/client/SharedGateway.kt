package dev.fanout.client

import org.junit.jupiter.api.extension.ExtensionContext
import org.junit.jupiter.api.extension.ParameterContext
import org.junit.jupiter.api.extension.ParameterResolver

/**
 * One [RealGateway] (and its nats-server) for the whole test run: every class or test that takes a `RealGateway`
 * parameter gets the same one, started on first use. It lives in the root context's store, which closes it (an
 * AutoCloseable) once, after the last class. Sharing is safe because each test uses channels of its own
 * ([RealGateway.channel]); a test that stops the gateway ([RealGateway.freeze]) holds [LOCK] exclusively, the
 * others share it. A test that needs a gateway with other settings starts its own, and says why.
 *
 * Use: `@ExtendWith(SharedGateway::class) @ResourceLock(SharedGateway.LOCK, mode = READ) class XTest(private val gateway: RealGateway)`.
 */
class SharedGateway : ParameterResolver {
    override fun supportsParameter(parameter: ParameterContext, context: ExtensionContext): Boolean =
        parameter.parameter.type == RealGateway::class.java

    override fun resolveParameter(parameter: ParameterContext, context: ExtensionContext): RealGateway =
        context.root.getStore(NAMESPACE).getOrComputeIfAbsent(KEY, { RealGateway() }, RealGateway::class.java)

    companion object {
        /** The resource lock of the shared gateway: READ to use it, READ_WRITE to freeze it. */
        const val LOCK = "dev.fanout.client.SharedGateway"
        private val NAMESPACE = ExtensionContext.Namespace.create(SharedGateway::class.java)
        private const val KEY = "gateway"
    }
}
