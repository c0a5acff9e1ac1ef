"""The API's routes, one router per group; app.py composes them."""
