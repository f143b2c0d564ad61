"""Page fetching, classification and quote verification: /v1/verify/*, /v1/fetch, samples."""
