"""The texts of account mail. Plain text: every client shows it, and links stay visible and whole."""

from __future__ import annotations

from agent_server.mail.outbox import Mail


def _minutes(seconds: int) -> str:
    if seconds % 86_400 == 0:
        days = seconds // 86_400
        return f"{days} day{'s' if days != 1 else ''}"
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{max(1, seconds // 60)} minutes"


def verify_email(
    to: str, service: str, organisation: str, plan: str, trial_days: int, link: str, ttl: int
) -> Mail:
    text = (
        f"Welcome to {service}.\n\n"
        f"To create the organisation {organisation} on the {plan} plan, with a {trial_days}-day trial "
        "and no card needed, confirm your e-mail address:\n\n"
        f"  {link}\n\n"
        f"The link works once and expires in {_minutes(ttl)}.\n"
        "If you did not register, ignore this message; nothing is created without the link.\n"
    )
    return Mail(to, f"Confirm your e-mail address for {service}", text, "verify_email")


def already_registered(to: str, service: str, login_url: str, reset_url: str) -> Mail:
    text = (
        f"Someone, perhaps you, tried to register {to} with {service}. This address has an account "
        "already, so nothing new was created.\n\n"
        f"Sign in at {login_url}\n"
        f"Forgot your password? Ask for a reset link at {reset_url}\n\n"
        "If it was not you, ignore this message.\n"
    )
    return Mail(to, f"You already have a {service} account", text, "already_registered")


def password_reset(to: str, service: str, link: str, ttl: int) -> Mail:
    text = (
        f"A password reset was asked for {to} on {service}. Choose a new password here:\n\n"
        f"  {link}\n\n"
        f"The link works once and expires in {_minutes(ttl)}. Setting a new password signs you out "
        "everywhere else.\nIf you did not ask for this, ignore this message; your password stays as it is.\n"
    )
    return Mail(to, f"Reset your {service} password", text, "password_reset")


def invite(to: str, service: str, organisation: str, link: str, ttl: int) -> Mail:
    text = (
        f"An administrator of {service} created the organisation {organisation} for you, with you "
        "as its administrator.\n\nChoose your password to sign in:\n\n"
        f"  {link}\n\n"
        f"The link works once and expires in {_minutes(ttl)}.\n"
    )
    return Mail(to, f"Your {service} organisation {organisation} is ready", text, "invite")


def member_invite(
    to: str, service: str, organisation: str, inviter: str, role: str, link: str, ttl: int, *, sso: bool
) -> Mail:
    how = (
        "open the link and sign in through your organisation's single sign-on"
        if sso
        else "open the link to accept (a new account chooses its password there)"
    )
    text = (
        f"{inviter} invited you to join the organisation {organisation} on {service} as {role}.\n\n"
        f"To join, {how}:\n\n"
        f"  {link}\n\n"
        f"The link works once and expires in {_minutes(ttl)}. If you did not expect this, ignore it; "
        "nothing happens without the link.\n"
    )
    return Mail(to, f"Join {organisation} on {service}", text, "member_invite")


def anonymous_key(to: str, service: str, expires: str, register_url: str) -> Mail:
    text = (
        f"An agent asked {service} for a free API key for {to}, and got one. It works until {expires} "
        "on the Free plan.\n\n"
        f"To keep it, register an organisation with this address at {register_url}: once you confirm "
        "the address, the agent's live keys become your organisation's keys and stop expiring.\n\n"
        "If you know of no such agent, ignore this message; the key expires on its own.\n"
    )
    return Mail(to, f"An agent got a {service} key for your address", text, "anonymous_key")
