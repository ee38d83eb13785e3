"""Reminders to tenants: the deprecation mails of spec 9 (month 6 and the final month of an old version)."""
