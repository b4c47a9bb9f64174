"""The rest of the credits: the supporting cast and the crew a film or show has on TMDB beyond our fixtures.

The live API lists a film's whole cast and crew (The Dark Knight: 130 cast, 250 crew); our fixtures hold the
few people the tasks ask about. :func:`crowd` adds, after the fixture's own credits, people made up from
small name pools: how many, who, and in which role are drawn from a random generator seeded with the
title's id, so every machine and run gets the same credits. They never take a role a task can ask about: the added cast
play minor parts ("Reporter #2"), the added crew have below-the-line jobs (no Director, Producer, Writer or
composer), and they are listed after the fixture's people, so ``cast[0]`` and ``crew[?job=='Director']``
stay what they were. A title marked ``"full_cast": true`` in the fixtures (a TV special whose
whole cast a task lists) gets crew only, as do TV shows (RestBench's queries list a show's whole cast). Each
made-up person has a record of their own (details, credits), kept apart from the
searchable people, so search, popular and trending lists do not change.
"""

from __future__ import annotations

import random
from typing import Any

FIRST = {
    1: ["Anna", "Beatrice", "Clara", "Dana", "Elena", "Fiona", "Greta", "Hana", "Ines", "Julia", "Kira", "Lena",
        "Maren", "Nora", "Olga", "Paula", "Rosa", "Sana", "Tessa", "Vera", "Wanda", "Yara", "Zoe", "Mila"],
    2: ["Aaron", "Bruno", "Caleb", "Dario", "Emil", "Felix", "Goran", "Hugo", "Ivo", "Jonas", "Karl", "Luca",
        "Milo", "Nils", "Oskar", "Pavel", "Rafael", "Soren", "Tomas", "Viktor", "Wes", "Yusuf", "Zeno", "Arlo"],
}
LAST = ["Abernathy", "Brandvold", "Castellan", "Dunmore", "Eskildsen", "Farrowby", "Galloway", "Hartigan",
        "Ibsworth", "Jarrell", "Kettering", "Lindqvist", "Marchetti", "Northcott", "Oyelaran", "Pemberton",
        "Quillan", "Rasmussen", "Saltonstall", "Trevanion", "Underhill", "Vasquez-Lowe", "Whitcombe", "Yarborough",
        "Zellweger-Koss", "Ashdown", "Blackmore", "Crowther", "Delacroix", "Elsworth", "Fenwick", "Grimsby"]
PARTS = ["Reporter", "Police Officer", "Nurse", "Bartender", "Server", "Taxi Driver", "Security Guard", "Doctor",
         "Neighbor", "Student", "Party Guest", "Soldier", "Clerk", "Pilot", "Bus Driver", "Paramedic", "Janitor",
         "Teacher", "Shop Owner", "Receptionist", "Detective", "Lawyer", "Hotel Manager", "Photographer", "Guard",
         "Mechanic", "Dancer", "Singer", "Prisoner", "Technician", "Cook", "Bystander", "Passer-by"]
JOBS = [("Gaffer", "Lighting"), ("Key Grip", "Camera"), ("Best Boy Electric", "Lighting"), ("Boom Operator", "Sound"),
        ("Sound Mixer", "Sound"), ("Set Decoration", "Art"), ("Costume Design", "Costume & Make-Up"),
        ("Makeup Artist", "Costume & Make-Up"), ("Hairstylist", "Costume & Make-Up"), ("Stunt Coordinator", "Crew"),
        ("Stunts", "Crew"), ("Visual Effects Supervisor", "Visual Effects"), ("Script Supervisor", "Crew"),
        ("Location Manager", "Production"), ("Dialogue Editor", "Sound"), ("Sound Effects Editor", "Sound"),
        ("Foley Artist", "Sound"), ("Colorist", "Editing"), ("Camera Operator", "Camera"),
        ("First Assistant Camera", "Camera"), ("Still Photographer", "Camera"), ("Property Master", "Art"),
        ("Construction Coordinator", "Art"), ("Transportation Coordinator", "Crew"),
        ("Production Accountant", "Production"), ("Unit Publicist", "Crew"), ("Dolly Grip", "Camera"),
        ("Digital Compositor", "Visual Effects"), ("Matte Painter", "Visual Effects"), ("Music Editor", "Sound"),
        ("Orchestrator", "Sound"), ("Choreographer", "Crew"), ("Dialect Coach", "Crew"), ("Armorer", "Crew"),
        ("Greensman", "Art"), ("Title Designer", "Visual Effects"), ("Rigging Gaffer", "Lighting"),
        ("Assistant Editor", "Editing"), ("Art Department Coordinator", "Art"), ("Caterer", "Crew")]
DEPARTMENTS = dict(JOBS)
# sizes of the whole credits, as the live API has them for a feature film or a series (before the fixture's own)
SIZES = {"movie": ((20, 50), (30, 110)), "tv": ((0, 0), (20, 60))}
ID_BASE = 30_000_000  # made-up people's ids: above every id of the fixtures


def crowd(kind: str, media: dict[str, Any], taken: set[str],
          first_id: int) -> tuple[list[list[Any]], list[list[Any]], list[dict[str, Any]]]:
    """(cast, crew, people) to add to a movie's or show's credits: cast as [person id, character], crew as
    [person id, job], and the made-up people's records, numbered from ``first_id``. ``taken`` holds the
    names no made-up person may have (the fixture's people); names are unique within one title's credits."""
    rng = random.Random(f"tmdb-crowd:{kind}:{media['id']}")  # a string seed: the same on every machine and run
    taken = set(taken)
    (cast_low, cast_span), (crew_low, crew_span) = SIZES[kind]
    n_cast = cast_low + rng.randrange(cast_span) - len(media.get("cast", [])) if cast_span else 0
    n_cast = 0 if media.get("full_cast") else max(0, n_cast)
    n_crew = max(0, crew_low + rng.randrange(crew_span) - len(media.get("crew", [])))
    cast: list[list[Any]] = []
    crew: list[list[Any]] = []
    people: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for i in range(n_cast + n_crew):
        role = "cast" if i < n_cast else "crew"
        person = _person(rng, role, taken, first_id + i)
        people.append(person)
        if role == "cast":
            part = rng.choice(PARTS)
            counts[part] = counts.get(part, 0) + 1
            cast.append([person["id"], part if counts[part] == 1 else f"{part} #{counts[part]}"])
        else:
            job = rng.choice(JOBS)[0]
            person["dept"] = DEPARTMENTS[job]
            crew.append([person["id"], job])
    return cast, crew, people


def _person(rng: random.Random, role: str, taken: set[str], pid: int) -> dict[str, Any]:
    gender = rng.choice((1, 2))
    for salt in range(100):
        first, last, initial = rng.choice(FIRST[gender]), rng.choice(LAST), rng.choice("ABCDEFGHJKLMNPRSTW")
        name = f"{first} {last}" if salt == 0 else f"{first} {initial}. {last}" if salt < 4 else f"{first} {last} {salt}"
        if name not in taken:
            break
    taken.add(name)
    born = f"{rng.randrange(1940, 2000)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    return {"id": pid, "name": name, "gender": gender, "dept": "Acting" if role == "cast" else "Crew",
            "pop": round(rng.uniform(0.6, 4.6), 3), "birthday": born, "place": None, "deathday": None, "bio": "",
            "crowd": True}


__all__ = ["crowd"]
