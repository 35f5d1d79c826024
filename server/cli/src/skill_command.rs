//! `lode skill list|show|trust|revoke`: the skills lode would offer in this workspace, one
//! skill's full text, and the trust decisions for workspace skills. Discovery, validation and
//! trust records live in `lode_agent::skills`; this module only prints.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use lode_agent::skills::{Skill, SkillSet, SkillSource, SkillsConfig, TrustState};
use serde::Serialize;

use crate::commands::{WorkspaceArgs, resolve_root};
use crate::output::print_json_lines;
use crate::render::say;

/// Options of `lode skill`.
#[derive(Debug, Args)]
pub struct SkillArgs {
    #[command(subcommand)]
    pub command: SkillCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillCommand {
    /// Every skill lode offers here (workspace, user, bundled), with its trust; invalid skills
    /// are reported on stderr.
    List {
        /// One JSON object per skill.
        #[arg(long)]
        json: bool,
    },
    /// A skill's metadata, files and full text (read it before trusting a workspace skill).
    Show { name: String },
    /// Trust a workspace skill (`.lode/skills/NAME`) with its current content; a later change
    /// makes it untrusted again.
    Trust { name: String },
    /// Withdraw trust from a workspace skill.
    Revoke { name: String },
}

#[derive(Serialize)]
struct SkillLine<'a> {
    name: &'a str,
    source: &'static str,
    trust: &'static str,
    description: &'a str,
    path: Option<String>,
    allowed_tools: &'a [String],
    content_hash: &'a str,
}

fn line(skill: &Skill) -> SkillLine<'_> {
    SkillLine {
        name: &skill.name,
        source: skill.source.label(),
        trust: skill.trust.label(),
        description: &skill.description,
        path: skill.dir.as_ref().map(|d| d.display().to_string()),
        allowed_tools: &skill.allowed_tools,
        content_hash: &skill.content_hash,
    }
}

/// Runs `lode skill …`.
pub fn run_skill(workspace: &WorkspaceArgs, args: SkillArgs) -> anyhow::Result<ExitCode> {
    let root = resolve_root(workspace, None)?;
    let set = SkillSet::new(SkillsConfig::for_workspace(&root), None);
    match args.command {
        SkillCommand::List { json } => {
            let skills = set.skills();
            for problem in set.problems() {
                say!("lode: warning: {problem}");
            }
            for (name, source, dir, winner) in set.shadowed() {
                let place = dir
                    .map(|d| format!(" ({})", d.display()))
                    .unwrap_or_default();
                say!(
                    "lode: note: the {} skill {name}{place} is hidden by the {} one",
                    source.label(),
                    winner.label()
                );
            }
            if json {
                let lines: Vec<SkillLine<'_>> = skills.iter().map(|s| line(s)).collect();
                print_json_lines(&lines)?;
            } else {
                let width = skills.iter().map(|s| s.name.len()).max().unwrap_or(0);
                for skill in &skills {
                    let mut description: String = skill.description.chars().take(90).collect();
                    if description.len() < skill.description.len() {
                        description.push('…');
                    }
                    let trust = match skill.trust {
                        TrustState::Trusted => String::new(),
                        other => format!(" [{}]", other.label()),
                    };
                    println!(
                        "{:width$}  {:9}  {description}{trust}",
                        skill.name,
                        skill.source.label()
                    );
                }
                let untrusted = skills.iter().filter(|s| !s.trust.is_trusted()).count();
                if untrusted > 0 {
                    say!(
                        "lode: {untrusted} workspace skill(s) are untrusted: the model sees them only as quoted text. Review with `lode skill show NAME`, then `lode skill trust NAME`."
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillCommand::Show { name } => {
            let skill = set
                .get(&name)
                .with_context(|| format!("no skill named {name:?} (see `lode skill list`)"))?;
            println!("name:          {}", skill.name);
            println!("source:        {}", skill.source.label());
            if let Some(dir) = &skill.dir {
                println!("path:          {}", dir.display());
            }
            println!("trust:         {}", skill.trust.label());
            println!("content hash:  {}", skill.content_hash);
            if !skill.allowed_tools.is_empty() {
                println!("allowed tools: {}", skill.allowed_tools.join(" "));
            }
            if let Some(compatibility) = &skill.compatibility {
                println!("compatibility: {compatibility}");
            }
            println!("description:   {}", skill.description);
            for resource in &skill.resources {
                println!("file:          {resource}");
            }
            println!("\n{}", skill.body);
            Ok(ExitCode::SUCCESS)
        }
        SkillCommand::Trust { name } => {
            let skill = set.trust(&name)?;
            println!("trusted {} ({})", skill.name, skill.content_hash);
            if !skill.allowed_tools.is_empty() {
                println!(
                    "while selected it pre-approves: {}",
                    skill.allowed_tools.join(" ")
                );
            }
            if skill.source == SkillSource::Workspace && !skill.resources.is_empty() {
                println!(
                    "the trust covers these files too: {}",
                    skill.resources.join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillCommand::Revoke { name } => {
            if set.revoke(&name)? {
                println!("{name} is no longer trusted");
            } else {
                println!("{name} was not trusted");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
