// apify's proxy-chain as the gateway benchmark's peer (issue 24): its Server with a random
// upstream per request (one CONNECT per connection in the benchmark) and nothing else, no
// client authentication, no limits, as Crawlee runs it in front of a proxy list.
//
// Copied at run time into the scratch folder where `npm install proxy-chain@3` put
// node_modules/ (ESM resolves imports from the script's own folder). The upstream URLs
// carry credentials, so they come on stdin as JSON, {"upstreams": ["http://u:p@h:port"]},
// not on the command line; the first line on stdout is `listening on PORT`.
import { Server } from 'proxy-chain';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { upstreams } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
if (!Array.isArray(upstreams) || upstreams.length === 0) {
  console.error('proxy_chain_server: no upstreams on stdin');
  process.exit(2);
}

const server = new Server({
  host: '127.0.0.1',
  port: 0,
  prepareRequestFunction: () => ({
    upstreamProxyUrl: upstreams[Math.floor(Math.random() * upstreams.length)],
  }),
});
// Without a listener the server logs nothing for a failed request; the load generator
// counts refusals, and this says why (the error's code only: its text may name an upstream).
server.on('requestFailed', ({ error }) => console.error(`request failed: ${error.code ?? error.name}`));

await server.listen();
console.log(`listening on ${server.port}`);

const stop = async () => {
  await server.close(true);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
