"""The API's HTTP plumbing, under every domain package: auth, the error mapping, request
fields, Idempotency-Key checks, HEAD and OPTIONS fixes, the OpenAPI document and its
Redoc page, request metrics, and the reading of X-Forwarded-For."""
