import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** The console is served by the api role at /console (see packages/server/src/http/console.ts). */
export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 600 },
  // `npm run dev --workspace @rendezvous/console` proxies the API to a local `npm start`
  server: {
    proxy: {
      "/console/api": "http://127.0.0.1:8080",
      "/v1": "http://127.0.0.1:8080",
      "/admin": "http://127.0.0.1:8080",
    },
  },
});
