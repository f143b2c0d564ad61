"""Receipt routes: the public keys and the free receipt check."""

from django.urls import path

from receipts import views

urlpatterns = [
    path(".well-known/jwks.json", views.JwksView.as_view(), name="jwks"),
    path("v1/receipt/verify", views.ReceiptVerifyView.as_view(), name="receipt-verify"),
    path("v1/log/head", views.LogHeadView.as_view(), name="log-head"),
    path("v1/log/proof", views.LogProofView.as_view(), name="log-proof"),
    path("v1/log/consistency", views.LogConsistencyView.as_view(), name="log-consistency"),
]
