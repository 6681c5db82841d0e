# syntax=docker/dockerfile:1
# One image for every role: `docker run IMAGE start|api|matcher|scheduler|dispatcher|doctor`.
# Build stage: full install (dev tools: TypeScript, turbo) and `npm run build` → packages/*/dist.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/engine/package.json packages/engine/
COPY packages/http/package.json packages/http/
COPY packages/workers/package.json packages/workers/
COPY packages/client/package.json packages/client/
COPY packages/server/package.json packages/server/
COPY packages/testkit/package.json packages/testkit/
COPY packages/console/package.json packages/console/
# --ignore-scripts: the root `prepare` hook (builds the console) needs the sources, copied below;
# `npm run build` builds the console with the other packages (turbo)
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.base.json tsconfig.json tsconfig.source.json turbo.json ./
COPY packages packages
RUN npm run build

# Runtime stage: production dependencies only, the compiled packages, non-root.
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    TURBO_TELEMETRY_DISABLED=1
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/protocol/package.json packages/protocol/
COPY packages/engine/package.json packages/engine/
COPY packages/http/package.json packages/http/
COPY packages/workers/package.json packages/workers/
COPY packages/client/package.json packages/client/
COPY packages/server/package.json packages/server/
COPY packages/testkit/package.json packages/testkit/
COPY packages/console/package.json packages/console/index.js packages/console/index.d.ts packages/console/
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force
COPY --from=build /app/packages/protocol/dist packages/protocol/dist
COPY --from=build /app/packages/engine/dist packages/engine/dist
COPY --from=build /app/packages/http/dist packages/http/dist
COPY --from=build /app/packages/workers/dist packages/workers/dist
COPY --from=build /app/packages/client/dist packages/client/dist
COPY --from=build /app/packages/server/dist packages/server/dist
COPY --from=build /app/packages/console/dist packages/console/dist
COPY packages/server/bin packages/server/bin
USER node
EXPOSE 8080
# The CLI runs packages/server/dist when it is there (it is, in this image).
ENTRYPOINT ["node", "--max-semi-space-size=64", "packages/server/bin/rendezvous.js"]
CMD ["start"]
