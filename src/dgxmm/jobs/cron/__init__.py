"""The cron expression: five fields read on the wall clock of an IANA zone.

- ``expression``: ``CronSchedule``, the parser and evaluator (the next fire time, the
  day-of-month / day-of-week OR rule), and ``FireTime``, one previewed fire time;
- ``zones``: ``ZoneClock``, wall times in IANA zones and the one daylight-saving rule every
  schedule follows (``resolve_zone``, ``zone_clock``);
- ``calendar``: Gregorian calendar arithmetic on integer day numbers;
- ``nicknames``: ``@daily`` and its kin, each the five fields it stands for;
- ``describe``: an expression's fields said in plain English (``CronSchedule.describe``).

Pure like the rest of the engine. Its public names are re-exported once, by ``dgxmm.jobs``;
the room has no face of its own.
"""

__all__: list[str] = []
