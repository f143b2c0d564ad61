"""Receipt routes: the public keys and the free receipt check."""

from django.urls import path

from attest.lazyviews import lazy_view

urlpatterns = [
    path(".well-known/jwks.json", lazy_view("receipts.views.JwksView"), name="jwks"),
    path("v1/receipt/verify", lazy_view("receipts.views.ReceiptVerifyView"), name="receipt-verify"),
    path("v1/log/head", lazy_view("receipts.views.LogHeadView"), name="log-head"),
    path("v1/log/proof", lazy_view("receipts.views.LogProofView"), name="log-proof"),
    path(
        "v1/log/consistency", lazy_view("receipts.views.LogConsistencyView"), name="log-consistency"
    ),
]
