"""Capacity every server process shares: the match and PDF queues, the PDF workers, their state."""
