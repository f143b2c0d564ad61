"""How the admin (and every template) writes dates and times: to the second, with the zone.

Django's English formats drop the seconds and the zone ("Dec. 1, 2026, 8:17 p.m."); a
ledger's times are read to the second and always in UTC (TIME_ZONE), so the zone is written
out ("2026-12-01 20:17:30 UTC"). Found through FORMAT_MODULE_PATH in the settings.
"""

DATETIME_FORMAT = "Y-m-d H:i:s T"
TIME_FORMAT = "H:i:s"
DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
SHORT_DATE_FORMAT = DATE_FORMAT
