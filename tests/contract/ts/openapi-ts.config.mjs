// @hey-api/openapi-ts settings for scripts/contract, which names the document and the
// output folder in ROLLBOARD_OPENAPI and ROLLBOARD_TS_CLIENT: the fetch client, the types
// and the SDK (one function per operation, named by its operationId). Imports end in
// `.js`, as Node's ES modules (tsconfig.json: NodeNext) need.
export default {
  input: process.env.ROLLBOARD_OPENAPI,
  output: {
    path: process.env.ROLLBOARD_TS_CLIENT,
    importFileExtension: '.js',
  },
  plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
};
