"""Pure receipt logic: canonical payloads and compact-JWS signing and checking, no Django."""
