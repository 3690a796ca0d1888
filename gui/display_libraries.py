"""The X11 libraries Qt's xcb platform plugin loads, checked before Qt is imported.

PySide6's wheels bring Qt but not the X11 client libraries its xcb plugin links against; a minimal Debian and
many Ubuntu installs lack some (libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1), and Qt then aborts with
"Could not load the Qt platform plugin xcb" and a page of hints. `missing_libraries()` tries to load each one
as the plugin would, and `install_hint()` names the packages to install on Debian/Ubuntu and Fedora.
The table is the xcb plugin's own dependencies (`ldd libqxcb.so libQt6XcbQpa.so.6` in PySide6 6.11).
No Qt here: this runs before Qt loads.
"""

from __future__ import annotations

import ctypes
import os
import sys

# shared object: (Debian/Ubuntu package, Fedora package)
XCB_LIBRARIES = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
}


def uses_xcb(environ=os.environ, platform: str = sys.platform) -> bool:
    """Whether Qt will load its xcb plugin: on Linux, when QT_QPA_PLATFORM asks for xcb or, unset, when
    there is no Wayland display (a Wayland session gets Qt's wayland plugin, which needs none of these)."""
    if not platform.startswith("linux"):
        return False
    asked = environ.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    return asked == "xcb" if asked else not environ.get("WAYLAND_DISPLAY")


def _loads(name: str) -> bool:
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def missing_libraries(loads=_loads) -> list[str]:
    """The shared objects of XCB_LIBRARIES this system cannot load, in the table's order."""
    return [name for name in XCB_LIBRARIES if not loads(name)]


def install_hint(missing: list[str]) -> str:
    """One line naming what is missing and the commands that install it."""
    debian = " ".join(dict.fromkeys(XCB_LIBRARIES[m][0] for m in missing))
    fedora = " ".join(dict.fromkeys(XCB_LIBRARIES[m][1] for m in missing))
    return (f"the window needs X11 libraries this system lacks ({', '.join(missing)}); install them with "
            f"'sudo apt install {debian}' (Debian/Ubuntu) or 'sudo dnf install {fedora}' (Fedora), "
            "then start gpt-explorer again")
