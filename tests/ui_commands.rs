//! The command table (`ui::commands::TABLE`) is the one source of the menus' labels and the
//! shortcuts: every shortcut fires its command, every menu item is labelled from the table, and the
//! UI does not reach into the app.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
#![cfg(feature = "gui")]

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::ui::commands::{self, Action, CommandId, TABLE};

#[test]
fn every_shortcut_in_the_table_fires_its_command() {
    let mut h = Harness::builder().build_ui_state(
        |ui, out: &mut Vec<Action>| commands::from_shortcuts(ui.ctx(), out),
        Vec::new(),
    );
    h.run();
    let mut pressed = 0;
    for e in TABLE {
        for s in e.shortcuts {
            h.state_mut().clear();
            h.key_press_modifiers(s.modifiers, s.logical_key);
            h.run();
            assert_eq!(h.state(), &vec![Action::Run(e.id)], "{:?}", s);
            pressed += 1;
        }
    }
    assert!(pressed >= 11, "{pressed} shortcuts");
}

#[test]
fn every_command_has_one_row() {
    for e in TABLE {
        let rows = TABLE.iter().filter(|r| r.id == e.id).count();
        assert_eq!(rows, 1, "{:?}", e.id);
        assert!(!e.label.is_empty() && !e.hover.is_empty(), "{:?}", e.id);
    }
    assert_eq!(
        commands::get(CommandId::Redo).map(|e| e.shortcuts.len()),
        Some(2)
    );
}

/// Opens each menu of the real window and finds every table row's label in it.
#[test]
fn every_menu_item_is_labelled_from_the_table() {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1200.0))
        .build_ui_state(
            |ui, app: &mut ExplorerApp| app.ui(ui),
            ExplorerApp::default(),
        );
    h.run();
    let mut found = Vec::new();
    for menu in ["File", "Edit", "View", "Help"] {
        h.get_by_label(menu).click();
        h.run();
        for e in TABLE {
            // An item with a shortcut is labelled "Save Ctrl+S" for a screen reader.
            let shown = h.query_all_by_label_contains(e.label).count();
            if shown > 0 && !found.contains(&e.id) {
                found.push(e.id);
            }
        }
        h.key_press(egui::Key::Escape);
        h.run();
    }
    // "Clear recent files" shows only with recent files; every other row is a menu item.
    let missing: Vec<CommandId> = TABLE
        .iter()
        .map(|e| e.id)
        .filter(|id| !found.contains(id) && *id != CommandId::ClearRecent)
        .collect();
    assert!(missing.is_empty(), "not in any menu: {missing:?}");
}

/// Layering: `ui` never imports `app` (the app maps the UI's actions to its commands).
#[test]
fn ui_does_not_import_app() {
    let mut stack = vec![std::path::PathBuf::from("src/ui")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src/ui") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source");
            for line in text.lines().filter(|l| l.trim_start().starts_with("use ")) {
                assert!(!line.contains("crate::app"), "{}: {line}", path.display());
            }
        }
    }
}
