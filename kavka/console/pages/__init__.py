"""The console's pages, one module per area; each has ``routes(web)``
returning its Starlette routes."""
