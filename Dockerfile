# syntax=docker/dockerfile:1
# One image for the five Fathom services and the simulated target; docker-compose.yml picks
# the entry point per service, e.g. `node dist/apps/analyzer/src/main.js`.

# --- build: install every dependency, compile apps/ and libs/ to dist/ with swc --------------
FROM node:20-bookworm AS build
WORKDIR /app
# onnxruntime-node bundles its CPU binaries; `skip` stops its installer fetching GPU extras.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    NX_DAEMON=false \
    NX_NO_CLOUD=true
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would compile sources that are not copied yet (this layer is
# cached on the lockfile alone); the build runs explicitly below. No dependency needs its
# install script at run time (onnxruntime-node: GPU downloads only; protobufjs: a version note).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY .swcrc ./
COPY scripts ./scripts
COPY bin ./bin
COPY apps ./apps
COPY libs ./libs
RUN node scripts/build.js \
 && test -f dist/apps/orchestrator/src/main.js \
 && test -f dist/apps/analyzer/src/main.js

# --- prod-deps: runtime dependencies only -----------------------------------------------------
FROM node:20-bookworm AS prod-deps
WORKDIR /app
ENV ONNXRUNTIME_NODE_INSTALL=skip
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# --- runtime ----------------------------------------------------------------------------------
FROM node:20-bookworm-slim AS runtime
WORKDIR /app
# MALLOC_ARENA_MAX: at most 2 glibc malloc arenas for the service's threads. glibc gives each
# allocating thread (engine, embedder, libuv pool, onnxruntime) an arena, and one's free memory
# is not reused by another: over 15 minutes at 48 streams the cap kept RSS ~100 MB lower and its
# growth past the analyzer's live horizon at 1.3 instead of 3.1 MB/min (bench/RESULTS.md).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    MALLOC_ARENA_MAX=2
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY deploy/docker/healthcheck.js ./deploy/docker/healthcheck.js
# Embedded PGlite (when DATABASE_URL is unset) keeps its data under ~/.fathom: the node
# user's home is writable.
USER node
# orchestrator, load-generator, semantic-monitor, gpu-collector, analyzer, sim-target
EXPOSE 7070 7071 7072 7073 7074 8000
CMD ["node", "dist/apps/orchestrator/src/main.js"]
