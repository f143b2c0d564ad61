"""HTTP views and serializers of the verification routes: parse, call one service, render."""
