# fanout-gateway image: build with the dev toolchain, run with production dependencies only.
#   docker build -t fanout-gateway .
#   docker run --rm -p 9000:9000 -e NATS_URL=nats://host.docker.internal:4222 fanout-gateway
# Debian (glibc), not Alpine: uWebSockets.js ships prebuilt glibc binaries.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# gateway/public may be empty (git keeps no empty folders); make sure the runtime stage can copy it.
RUN npm run build && mkdir -p gateway/public

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=9000
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/gateway/public ./gateway/public
# The image's "node" user (uid 1000), numeric so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 9000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/gateway/src/cli.js"]
