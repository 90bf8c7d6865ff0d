// Replace the /?token=... entry so the token leaves the address bar and the history.
window.location.replace("/");
